"""Hints the command line prints on stderr (never on stdout: results stay clean)."""

from __future__ import annotations

import duckdb

from icetide.errors import IcetideError
from icetide.query.readonly import check_read_only

#: A one-shot read on Spark pays for a new JVM; the hint names the engine that does not.
DUCKDB_HINT = (
    "hint: this read took {seconds:.0f}s on Spark (a one-shot command starts a JVM each "
    "time); `--engine duckdb` answers reads without one, in about a second (DuckDB SQL "
    "over the same tables; docs/connect.md)")


def duckdb_hint(query: str, seconds: float) -> str | None:
    """The hint for a query run on Spark by default: only for one read-only statement
    DuckDB parses as such (for anything else DuckDB is no choice)."""
    try:
        check_read_only(query)
    except (IcetideError, duckdb.Error):
        return None
    return DUCKDB_HINT.format(seconds=seconds)
