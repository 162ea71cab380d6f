"""``dp.read`` / ``dp.read_stream``: placeholders resolved by a hook the runner installs.

Query functions call ``dp.read("db.table")`` to get a dataset as a DataFrame. What that
means depends on the run (the table's snapshot, an empty DataFrame in a dry run, the
incremental changes of a streaming input), so the runner installs a
:data:`Reader` with :func:`set_reader` while it runs query functions. The hook is
process-wide (not context-local) because the runner may call query functions from
worker threads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from icetide.errors import PipelineError
from icetide.pipelines.registry import current_registry

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: The run-time hook behind ``read``/``read_stream``: ``(name, streaming) -> DataFrame``.
Reader = Callable[[str, bool], "DataFrame"]

_reader: Reader | None = None

#: The run-time hook behind source reads such as ``kafka.read``:
#: ``(source name, options) -> DataFrame`` (the engine installs it while flows run).
SourceReader = Callable[[str, Mapping[str, object]], "DataFrame"]

_source_reader: SourceReader | None = None


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


def set_source_reader(reader: SourceReader | None) -> SourceReader | None:
    """Install the run-time hook behind :func:`read_source`; returns the previous one."""
    global _source_reader
    previous, _source_reader = _source_reader, reader
    return previous


def read_source(source: str, **options: object) -> DataFrame:
    """This batch's rows of pipeline source ``source`` (e.g. ``kafka.read`` → ``format="json"``)."""
    reader = _source_reader
    if reader is None:
        raise PipelineError(
            f"reading source {source!r} needs a running flow: call it inside a query function "
            "(the body of a @dp.table function), which `icetide run` executes per micro-batch"
        )
    return reader(source, options)
