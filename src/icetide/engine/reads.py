"""Reading a flow's sources from inside its transform (user code calls these).

``read_json`` is what ``icetide.sources.kafka.read`` does (through the source-read hook
:func:`read_source_hook`, installed while flows run): this batch's range of a source,
decoded with an explicit schema; rows that fail decoding or validation go to the flow's
dead-letter table with the reason, never dropped and never fatal.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from icetide.errors import PipelineError
from icetide.flows.context import current_batch
from icetide.lake.dlq import dead_letters

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

#: Unique names of the observed rejected-row counts (one plan may read several sources).
_observations = itertools.count()


def _struct(schema: StructType | str) -> StructType:
    from pyspark.sql.types import StructType as _StructType
    from pyspark.sql.types import _parse_datatype_string

    struct = schema if isinstance(schema, _StructType) else _parse_datatype_string(schema)
    if not isinstance(struct, _StructType):
        raise PipelineError(f"schema {schema!r} must be a struct DDL like 'uid string, n int'")
    return struct


def read_json(
    source: str, *, schema: StructType | str, dead_letter: str, required: Sequence[str] = ()
) -> DataFrame:
    """Valid rows of ``source`` in this batch: schema columns + ``_kafka_*`` provenance.

    ``schema`` is a StructType or a DDL string (``"uid string, expendTime int"``);
    ``required`` fields must be present and non-null; everything else that does not
    parse lands in ``dead_letter`` (``db.table``).
    """
    from pyspark.sql import functions as F

    from icetide.sources.kafka.decode import decode_json, split_decoded
    from icetide.sources.kafka.source import KafkaSource

    ctx = current_batch()
    struct = _struct(schema)
    key = ctx.aliases.get(source, source)
    src = ctx.sources.get(key)
    if isinstance(src, KafkaSource):  # its reader decodes (kafka.reader: jvm or python)
        ctx.accessed.add(key)
        frame = src.read_json(ctx.spark, ctx.batches[key], struct, required)
    else:  # (read_source also raises for an undeclared source)
        frame = decode_json(ctx.read_source(source, cache=False), struct, required)
    # Read and parse every row exactly once: the decoded frame is what is cached, and both
    # the valid rows and the dead letters are cut from it.
    decoded = ctx.keep(f"decoded:{key}", frame, source=key)
    # The job that counts the flow's output passes every decoded row: it also counts the
    # rejected ones, so a batch without dead letters starts no job for them.
    rejected = f"icetide_rejected_{next(_observations)}"
    observed = decoded.observe(rejected, F.count(F.col("_error")).alias("rows"))
    valid, invalid = split_decoded(observed)
    ctx.emit(dead_letter, dead_letters(invalid, flow=ctx.flow, source=key),
             rows_metric=rejected)
    # Iceberg reserves `_partition` (and friends) for metadata columns: provenance is _kafka_*.
    return valid.withColumnsRenamed(
        {"_topic": "_kafka_topic", "_partition": "_kafka_partition", "_offset": "_kafka_offset"}
    )


def read_source_hook(source: str, options: Mapping[str, object]) -> DataFrame:
    """The engine's :data:`icetide.pipelines.reader.SourceReader`."""
    fmt = options.get("format")
    if fmt != "json":
        raise PipelineError(f"source {source!r}: unknown read format {fmt!r}; use 'json'")
    schema, dead_letter = options["schema"], options["dead_letter"]
    required = options.get("required", ())
    assert isinstance(dead_letter, str) and isinstance(required, tuple)
    return read_json(source, schema=schema, dead_letter=dead_letter,  # type: ignore[arg-type]
                     required=required)
