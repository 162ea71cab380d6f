"""The one error hierarchy of icetide.

Every message names the bad value and says how to fix it. The CLI prints
``IcetideError`` messages without a traceback; anything else is a bug.
"""

from __future__ import annotations

from collections.abc import Iterable


def listed(names: Iterable[object]) -> str:
    """``a, b, c`` for a message (never a Python list's brackets and quotes); ``(none)``
    when empty."""
    return ", ".join(str(n) for n in names) or "(none)"


class IcetideError(Exception):
    """Base class of every error icetide raises on purpose."""


class ConfigError(IcetideError):
    """The configuration file or environment overlay is invalid."""


class RuntimeSetupError(IcetideError):
    """Java, the Spark/Iceberg jars or the catalog cannot be set up."""


class NotReadyError(RuntimeSetupError):
    """Something icetide waits for (a server it started, a socket, a worker) did not become
    ready within its bound: names what and after how long, and where to look."""

    def __init__(self, what: str, waited: float, detail: str = "") -> None:
        self.what = what
        self.waited = waited
        super().__init__(f"{what} did not become ready after {waited:.1f}s"
                         + (f"; {detail}" if detail else ""))


class SourceError(IcetideError):
    """A source (Kafka, MySQL binlog, Debezium) cannot deliver what was asked."""


class SourceUnavailableError(SourceError):
    """A source could not be reached within the configured time (transient: a continuous
    run keeps retrying; ``--once`` stops with this error)."""


class OffsetOutOfRangeError(SourceError):
    """A committed Kafka offset is no longer (or not yet) available on the broker."""


class PositionLostError(SourceError):
    """A committed source position (e.g. a binlog file) was purged upstream."""


class PipelineError(IcetideError):
    """A pipeline definition is invalid: missing references, cycles, bad arguments."""


class QueryError(IcetideError):
    """An engine rejected or failed the statement itself: an error in the SQL, not in how
    icetide is set up (the CLI exits 1, as for Spark's and DuckDB's own SQL errors)."""


class TableError(IcetideError):
    """A table does not exist, or its schema or properties do not fit the request."""


class SchemaChangeError(TableError):
    """An upstream schema change that icetide cannot apply safely."""


class ExpectationFailed(IcetideError):
    """An ``expect_or_fail`` expectation was violated."""


class MaintenanceError(IcetideError):
    """A table-maintenance procedure or pass cannot run as asked (unknown procedure or
    argument, bad policy value)."""
