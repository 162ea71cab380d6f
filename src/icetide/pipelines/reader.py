"""``dp.read`` / ``dp.read_stream``: placeholders resolved by a hook the runner installs.

Query functions call ``dp.read("db.table")`` to get a dataset as a DataFrame. What that
means depends on the run (the table's snapshot, an empty DataFrame in a dry run, the
incremental changes of a streaming input), so the runner installs a
:data:`Reader` with :func:`set_reader` while it runs query functions. The hook is
process-wide (not context-local) because the runner may call query functions from
worker threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from icetide.errors import PipelineError
from icetide.pipelines.registry import current_registry

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: The run-time hook behind ``read``/``read_stream``: ``(name, streaming) -> DataFrame``.
Reader = Callable[[str, bool], "DataFrame"]

_reader: Reader | None = None


def set_reader(reader: Reader | None) -> Reader | None:
    """Install the run-time hook behind ``read``/``read_stream``; returns the previous one.

    The runner installs ``reader(name, streaming) -> DataFrame`` while it runs or
    dry-runs query functions and restores the previous hook (usually None) after.
    """
    global _reader
    previous, _reader = _reader, reader
    return previous


def _read(name: str, streaming: bool) -> DataFrame:
    api = "read_stream" if streaming else "read"
    reader = _reader
    if reader is not None:
        return reader(name, streaming)
    if current_registry() is not None:
        raise PipelineError(
            f"dp.{api}({name!r}) ran while the pipeline was being declared: call it inside "
            "a query function (the body of a @dp.table function), which icetide runs later"
        )
    raise PipelineError(
        f"dp.{api}({name!r}) needs a running pipeline: icetide installs the reader when it "
        "runs or dry-runs the pipeline; in a test install one with dp.set_reader(fn)"
    )


def read(name: str) -> DataFrame:
    """The current contents of dataset ``name`` (batch), inside a query function."""
    return _read(name, streaming=False)


def read_stream(name: str) -> DataFrame:
    """Dataset ``name`` as an incremental (streaming) input, inside a query function."""
    return _read(name, streaming=True)
