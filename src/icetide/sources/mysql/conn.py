"""The connection and row types the MySQL source passes around."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from pymysql.connections import Connection
    from pymysql.cursors import Cursor

#: A pymysql connection with its default (tuple) cursor: what ``pymysql.connect`` returns
#: (a string: pymysql's ``Connection`` is generic only in its type stubs).
MySqlConnection: TypeAlias = "Connection[Cursor]"
#: One row, or one primary key, as the server's values in column order.
Row: TypeAlias = tuple[object, ...]
