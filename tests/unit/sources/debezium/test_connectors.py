"""Messages as the Debezium MySQL and PostgreSQL connectors (2.x, 3.x) send them by default,
with and without schemas, decoded into the declared columns."""

from __future__ import annotations

from decimal import Decimal

import orjson
import pytest
from tests.unit.sources.debezium.connectors import (
    COLUMNS,
    PG_COLUMNS,
    VERSIONS,
    decoded,
    message,
    row,
)

from icetide.sources.debezium.decode import BadMessage, columns_of, decode

CASES = [pytest.param(c, v, s, id=f"{c}-{v}-{'schema' if s else 'schemaless'}")
         for c in ("mysql", "postgresql") for v in VERSIONS for s in (True, False)]


def _declared(connector: str) -> list[tuple[str, str]]:
    return list((PG_COLUMNS if connector == "postgresql" else COLUMNS).items())


def _values(raw: bytes, columns: list[tuple[str, str]]) -> dict[str, object]:
    change = decode(raw, columns, ("id",))
    assert change is not None
    return dict(zip([n for n, _ in columns], change.values, strict=True))


@pytest.mark.parametrize(("connector", "version", "schemas"), CASES)
def test_changes_decode_into_the_declared_columns(connector: str, version: str,
                                                  schemas: bool) -> None:
    """Precise decimals (base64 of the unscaled value, e.g. 'AeII' = 12.3400), MySQL's
    TINYINT(1) as int16 0/1 into a boolean column, dates, micro and zoned timestamps."""
    columns = _declared(connector)
    pg = connector == "postgresql"
    first = row(connector, 1, "12.3400", ratio="1234.567891")
    assert first["price"] == "AeII"
    raw = message(connector, version, "r", after=first, schemas=schemas)
    assert _values(raw, columns) == decoded(1, "12.34", ratio="1234.567891" if pg else None)

    negative = row(connector, 2, "-99999.9999", in_stock=0 if not pg else False, ratio="-3")
    raw = message(connector, version, "u", before=None if pg else first, after=negative,
                  schemas=schemas)
    assert _values(raw, columns) == decoded(2, "-99999.9999", in_stock=False,
                                            ratio="-3" if pg else None)

    # PostgreSQL's default REPLICA IDENTITY: a delete's before image has the key only
    before = {n: None for n, _ in columns} | {"id": 2} if pg else negative
    change = decode(message(connector, version, "d", before=before, schemas=schemas),
                    columns, ("id",))
    assert change is not None and change.op == "d" and change.values[0] == 2


@pytest.mark.parametrize(("connector", "version"),
                         [(c, v) for c in ("mysql", "postgresql") for v in VERSIONS])
def test_columns_learnt_from_the_schema_keep_the_carried_types(connector: str,
                                                               version: str) -> None:
    raw = message(connector, version, "c", after=row(connector, 7, "0.0001"))
    columns = columns_of(orjson.loads(raw)["schema"])
    assert dict(columns)["in_stock"] == ("int" if connector == "mysql" else "boolean")
    assert dict(columns)["price"] == "decimal(10,4)"
    values = _values(raw, list(columns))
    assert values["price"] == Decimal("0.0001")
    assert values["in_stock"] == (1 if connector == "mysql" else True)


@pytest.mark.parametrize("schemas", [True, False], ids=["schema", "schemaless"])
def test_a_tinyint_that_is_not_0_or_1_is_a_dead_letter_naming_both_types(schemas: bool) -> None:
    raw = message("mysql", "2.x", "c", after=row("mysql", 3, "1", in_stock=2), schemas=schemas)
    carried = "int16" if schemas else "JSON number"
    with pytest.raises(BadMessage) as caught:
        decode(raw, _declared("mysql"), ("id",))
    assert str(caught.value).startswith(f"column 'in_stock': cannot read 2 ({carried}) as "
                                        "boolean: ")


@pytest.mark.parametrize("schemas", [True, False], ids=["schema", "schemaless"])
def test_a_price_too_wide_for_the_declared_decimal_is_a_dead_letter(schemas: bool) -> None:
    raw = message("mysql", "3.x", "c", after=row("mysql", 4, "123456.7891"), schemas=schemas)
    columns = [(n, "decimal(8,4)" if n == "price" else t) for n, t in _declared("mysql")]
    with pytest.raises(BadMessage, match=r"column 'price': cannot read '[^']+' \((bytes "
                       r"\(org.apache.kafka.connect.data.Decimal, scale 4\)|JSON string)\) as "
                       r"decimal\(8,4\): 123456.7891 needs more than 4 digits"):
        decode(raw, columns, ("id",))
