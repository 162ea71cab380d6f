"""The seed's business rows (seed 001: user_db.products and user_db.user_member).

One definition, used by the embedded MariaDB loader and by ``icetide seed dims``.
"""

from __future__ import annotations

from decimal import Decimal

# (productId, name, description, product_price)
PRODUCTS: tuple[tuple[str, str, str, Decimal], ...] = (
    ("1", "test01", "Small 2-wheel scooter", Decimal("11.11")),
    ("2", "test02", "12V car battery", Decimal("11.11")),
    ("3", "test03", "12-pack of drill bits with sizes ranging from #40 to #3", Decimal("11.11")),
    ("4", "test04", "12oz carpenter's hammer", Decimal("11.11")),
    ("5", "test05", "14oz carpenter's hammer", Decimal("11.11")),
    ("6", "test06", "16oz carpenter's hammer", Decimal("11.11")),
    ("7", "test07", "box of assorted rocks", Decimal("11.11")),
    ("8", "test08", "water resistent black wind breaker", Decimal("11.11")),
    ("9", "test09", "24 inch spare tire", Decimal("11.11")),
)

# (userid, name, show_params, memberLevel)
USER_MEMBERS: tuple[tuple[str, str, str, int], ...] = (
    ("513248", "test01", "label01", 1),
    ("10952", "test02", "label02", 2),
    ("555655", "test03", "label03", 3),
    ("795098", "test04", "label04", 4),
    ("603670", "test05", "label05", 5),
)

# MySQL DDL as in seed 001 (memberLevel as its DDL spells it; its update statement and
# Flink tables say member_level).
MYSQL_DDL: tuple[str, ...] = (
    "CREATE TABLE products (productId VARCHAR(10) NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL,"
    " description VARCHAR(512), product_price DECIMAL(10, 4),"
    " update_time TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)",
    "CREATE TABLE user_member (userid VARCHAR(10) NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL,"
    " show_params VARCHAR(256), memberLevel int,"
    " update_time TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)",
)
