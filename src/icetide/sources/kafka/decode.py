"""Decode Kafka JSON values into typed columns, splitting off malformed rows.

``kafka.reader=jvm`` decodes every batch with :func:`decode_json` (Spark's ``from_json``
in the JVM). ``kafka.reader=python`` decodes in its reader tasks and parses only the
records they defer with the same functions (:mod:`.task_decode`), so both readers share
one definition of valid and one set of reasons.

:func:`parse_json` parses ``value`` with ``from_json`` in PERMISSIVE mode with a
corrupt-record column: a record that is not a JSON object, is truncated, or has a value
of the wrong type sets that column instead of being silently nulled; valid rows must also
carry every ``required`` field. Only rejected rows pay for the explanation (``malformed
JSON``, ``field expendTime: expected int, got string 'abc'``, ``missing required field
uid``). Spark's semantics are kept: a string field accepts any JSON value, trailing text
after a complete object is ignored. What each parse costs and how to consume both
halves: docs/architecture.md ("Decoding JSON values").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from icetide.errors import SourceError, listed

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructField, StructType

CORRUPT = "_corrupt_record"
META_COLUMNS = ("_topic", "_partition", "_offset", "_kafka_ts", "_value", "_error")
INVALID_COLUMNS = ("value", "topic", "partition", "offset", "timestamp", "error")
_SHOWN = 40  # characters of a bad value quoted in an error


def check_schema(schema: StructType, required: Sequence[str],
                 reserved: Sequence[str] = ()) -> None:
    """Raise unless every ``required`` field is in ``schema`` and no field is named like a
    column the decoding adds (or one of ``reserved``)."""
    names = set(schema.fieldNames())
    missing = [r for r in required if r not in names]
    if missing:
        raise SourceError(
            f"required fields {listed(missing)} are not in the schema (fields: "
            f"{listed(sorted(names))}): fix the `required` list or add the fields to the schema")
    clash = names & {CORRUPT, *META_COLUMNS, *reserved, "_p", "_fence"}
    if clash:
        raise SourceError(
            f"schema fields {listed(sorted(clash))} clash with columns parse_json adds: "
            "rename them")


def json_options() -> dict[str, str]:
    """``from_json`` options: PERMISSIVE, the corrupt record in :data:`CORRUPT`."""
    return {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}


def with_corrupt(fields: Sequence[StructField]) -> StructType:
    """``fields`` plus the :data:`CORRUPT` string column."""
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType([*fields, StructField(CORRUPT, StringType())])


def decode_json(df_raw: DataFrame, schema: StructType, required: Sequence[str] = ()) -> DataFrame:
    """Every raw row once, parsed: schema columns, ``_topic, _partition, _offset,
    _kafka_ts``, the raw ``_value`` and ``_error`` (``null`` for valid rows).

    Persist this (instead of ``df_raw``) and split it with :func:`split_decoded` to
    parse each row exactly once when both valid and rejected rows are consumed.
    """
    from pyspark.sql import functions as F

    check_schema(schema, required)
    text = F.col("value").cast("string")
    parsed = df_raw.select(
        "value", "topic", "partition", "offset", "timestamp",
        F.from_json(text, with_corrupt(schema.fields), json_options()).alias("_p"),
        # Nondeterministic on purpose: it keeps the optimizer from pushing filters below
        # this projection, which would copy from_json into every predicate and parse each
        # row once per required field (measured: ~6 parses per valid row).
        F.spark_partition_id().alias("_fence"),
    )
    # (the condition must use the fence, or column pruning drops it first)
    ok = (F.col("_fence") >= 0) & F.col("_p").isNotNull() & F.col(f"_p.{CORRUPT}").isNull()
    for name in required:
        ok = ok & F.col("_p").getField(name).isNotNull()
    return parsed.select(
        *[F.col("_p").getField(f.name).alias(f.name) for f in schema.fields],
        F.col("topic").alias("_topic"), F.col("partition").alias("_partition"),
        F.col("offset").alias("_offset"), F.col("timestamp").alias("_kafka_ts"),
        F.col("value").alias("_value"),
        F.when(ok, F.lit(None)).otherwise(explain_error(text, schema, required)).alias("_error"),
    )


def split_decoded(decoded: DataFrame) -> tuple[DataFrame, DataFrame]:
    """``(valid, invalid)`` of a :func:`decode_json` frame (see :func:`parse_json`)."""
    from pyspark.sql import functions as F

    fields = [c for c in decoded.columns if c not in ("_value", "_error")]
    valid = decoded.where(F.col("_error").isNull()).select(*fields)
    invalid = decoded.where(F.col("_error").isNotNull()).select(
        F.col("_value").alias("value"), F.col("_topic").alias("topic"),
        F.col("_partition").alias("partition"), F.col("_offset").alias("offset"),
        F.col("_kafka_ts").alias("timestamp"), F.col("_error").alias("error"),
    )
    return valid, invalid


def parse_json(
    df_raw: DataFrame, schema: StructType, required: Sequence[str] = ()
) -> tuple[DataFrame, DataFrame]:
    """Split raw Kafka rows into ``(valid, invalid)``.

    ``valid``: the schema's columns plus ``_topic, _partition, _offset, _kafka_ts``.
    ``invalid``: ``value, topic, partition, offset, timestamp, error`` (raw bytes kept).
    Each output parses every row once (rejected rows are explained, valid ones are not).
    """
    return split_decoded(decode_json(df_raw, schema, required))


def explain_error(text: Column, schema: StructType, required: Sequence[str]) -> Column:
    """A human-readable reason why ``text`` is not a valid record of ``schema``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField

    as_strings = F.from_json(
        text, with_corrupt([StructField(f.name, StringType()) for f in schema.fields]),
        json_options())
    problems = [_type_error(text, as_strings, f) for f in schema.fields
                if not isinstance(f.dataType, StringType)]
    problems += [
        F.when(as_strings.getField(name).isNull(), F.lit(f"missing required field {name}"))
        for name in required
    ]
    detail = F.concat_ws("; ", *problems) if problems else F.lit("")
    return (
        F.when(text.isNull(), F.lit("empty message (null value)"))
        .when(as_strings.isNull() | as_strings.getField(CORRUPT).isNotNull(),
              F.lit("malformed JSON"))
        .when(detail == "", F.lit("record does not match the schema"))
        .otherwise(detail)
    )


def _json_kind(text: Column, name: str) -> Column:
    """``string``/``object``/``array``/``boolean``/``number`` of the value of key ``name``."""
    from pyspark.sql import functions as F

    quoted = name.replace("\\E", "\\E\\\\E\\Q")
    first = F.regexp_extract(text, '"\\Q' + quoted + '\\E"\\s*:\\s*(.)', 1)
    return (
        F.when(first == '"', F.lit("string")).when(first == "{", F.lit("object"))
        .when(first == "[", F.lit("array")).when(first.isin("t", "f"), F.lit("boolean"))
        .otherwise(F.lit("number"))
    )


def _type_error(text: Column, as_strings: Column, field: StructField) -> Column:
    from pyspark.sql import functions as F

    alone = F.from_json(text, with_corrupt([field]), json_options())
    raw = as_strings.getField(field.name)
    shown = F.when(F.length(raw) > _SHOWN, F.concat(F.substring(raw, 1, _SHOWN), F.lit("...")))
    message = F.concat(
        F.lit(f"field {field.name}: expected {field.dataType.simpleString()}, got "),
        _json_kind(text, field.name), F.lit(" '"), F.coalesce(shown, raw), F.lit("'"),
    )
    return F.when(raw.isNotNull() & alone.getField(CORRUPT).isNotNull(), message)
