"""Decode Kafka JSON values into typed columns, splitting off malformed rows.

Fast path (:func:`finish_decoded`): the reader task already decoded the values with
:class:`~icetide.sources.kafka.arrow_decode.JsonDecoder`; only the records it deferred
(malformed, wrong types, or anything it cannot prove Spark reads the same way) go
through the Spark parse below, so both paths share one definition of valid and one set
of reasons. Schemas the Python decoder does not handle use :func:`decode_json` alone.

:func:`parse_json` parses ``value`` with Spark's ``from_json`` in PERMISSIVE mode with a
corrupt-record column: a record that is not a JSON object, is truncated, or has a value
of the wrong type (``"expendTime": "abc"`` for an int, an int overflow, a float for an
int) sets that column instead of being silently nulled. Valid rows must also carry
every ``required`` field (present and not ``null``).

Only the rejected rows pay for the explanation: a second parse with every field as a
string, then one single-field typed parse per non-string field, produce messages like
``malformed JSON``, ``field expendTime: expected int, got string 'abc'`` or
``missing required field uid``.

Cost: each of ``valid`` and ``invalid`` parses every row once (the explanation runs
for rejected rows only), and both derive from ``df_raw``. When consuming both, either
persist ``df_raw`` (2 parses per row) or persist the frame of
:func:`decode_json` and split it with :func:`split_decoded` (1 parse per row).
``from_json`` alone did 70-100k rows/s on 2 shared cores; in a batch profile of 400k
click events it took 4.3 of 6.3 s (read + decode), hence the fast path above: the
reader tasks decode with orjson at ~200k records/s per core, and Spark's parser
(any Spark type, Spark's semantics) runs only for deferred records.

Spark semantics kept on purpose: a string field accepts any JSON value (a number
``513248`` becomes ``"513248"``); trailing text after a complete object
(``{"a":1} junk``) is ignored and the record counts as valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from icetide.errors import SourceError, listed
from icetide.sources.kafka.arrow_decode import TAIL_FIELDS, JsonDecoder

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructField, StructType

CORRUPT = "_corrupt_record"
META_COLUMNS = ("_topic", "_partition", "_offset", "_kafka_ts", "_value", "_error")
INVALID_COLUMNS = ("value", "topic", "partition", "offset", "timestamp", "error")
_SHOWN = 40  # characters of a bad value quoted in an error


def _check(schema: StructType, required: Sequence[str]) -> None:
    names = set(schema.fieldNames())
    missing = [r for r in required if r not in names]
    if missing:
        raise SourceError(
            f"required fields {listed(missing)} are not in the schema (fields: "
            f"{listed(sorted(names))}): fix the `required` list or add the fields to the schema")
    clash = names & {CORRUPT, *META_COLUMNS, *(n for n, _ in TAIL_FIELDS), "_p", "_fence"}
    if clash:
        raise SourceError(
            f"schema fields {listed(sorted(clash))} clash with columns parse_json adds: "
            "rename them")


def _options() -> dict[str, str]:
    return {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}


def _with_corrupt(fields: Sequence[StructField]) -> StructType:
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType([*fields, StructField(CORRUPT, StringType())])


def decode_json(df_raw: DataFrame, schema: StructType, required: Sequence[str] = ()) -> DataFrame:
    """Every raw row once, parsed: schema columns, ``_topic, _partition, _offset,
    _kafka_ts``, the raw ``_value`` and ``_error`` (``null`` for valid rows).

    Persist this (instead of ``df_raw``) and split it with :func:`split_decoded` to
    parse each row exactly once when both valid and rejected rows are consumed.
    """
    from pyspark.sql import functions as F

    _check(schema, required)
    text = F.col("value").cast("string")
    parsed = df_raw.select(
        "value", "topic", "partition", "offset", "timestamp",
        F.from_json(text, _with_corrupt(schema.fields), _options()).alias("_p"),
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


def python_decoder(schema: StructType, required: Sequence[str] = ()) -> JsonDecoder | None:
    """The in-task decoder for ``schema``, or ``None`` if its types need Spark's parser."""
    _check(schema, required)
    fields = [(f.name, f.dataType.simpleString()) for f in schema.fields]
    return JsonDecoder.for_fields(fields, required)


def reader_schema(schema: StructType) -> StructType:
    """What a reader task with a :class:`JsonDecoder` for ``schema`` yields."""
    from pyspark.sql.types import (
        BinaryType,
        BooleanType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    tail = [StringType(), IntegerType(), LongType(), TimestampType(), BinaryType(),
            BooleanType()]
    return StructType([*(StructField(f.name, f.dataType) for f in schema.fields),
                       *(StructField(n, t) for (n, _), t in zip(TAIL_FIELDS, tail, strict=True))])


def _ref(name: str) -> Column:
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def finish_decoded(frame: DataFrame, schema: StructType,
                   required: Sequence[str] = ()) -> DataFrame:
    """A :func:`decode_json` frame from a reader-decoded ``frame`` (:func:`reader_schema`).

    Rows the reader decoded keep its values (``_error`` null); deferred rows are parsed
    and, if rejected, explained by Spark exactly as in :func:`decode_json`. ``from_json``
    sits in a ``CASE WHEN _deferred`` branch, so ordinary rows never run it.
    """
    from pyspark.sql import functions as F

    _check(schema, required)
    deferred = F.col("_deferred")
    text = F.col("_value").cast("string")
    parsed = frame.select(
        "*",
        F.when(deferred, F.from_json(text, _with_corrupt(schema.fields), _options()))
        .alias("_p"),
        F.spark_partition_id().alias("_fence"),  # see decode_json
    )
    ok = (F.col("_fence") >= 0) & F.col("_p").isNotNull() & F.col(f"_p.{CORRUPT}").isNull()
    for name in required:
        ok = ok & F.col("_p").getField(name).isNotNull()
    return parsed.select(
        *[F.when(deferred, F.col("_p").getField(f.name)).otherwise(_ref(f.name)).alias(f.name)
          for f in schema.fields],
        "_topic", "_partition", "_offset", "_kafka_ts", "_value",
        F.when(~deferred | ok, F.lit(None).cast("string"))
        .otherwise(explain_error(text, schema, required)).alias("_error"),
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
        text, _with_corrupt([StructField(f.name, StringType()) for f in schema.fields]),
        _options())
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

    alone = F.from_json(text, _with_corrupt([field]), _options())
    raw = as_strings.getField(field.name)
    shown = F.when(F.length(raw) > _SHOWN, F.concat(F.substring(raw, 1, _SHOWN), F.lit("...")))
    message = F.concat(
        F.lit(f"field {field.name}: expected {field.dataType.simpleString()}, got "),
        _json_kind(text, field.name), F.lit(" '"), F.coalesce(shown, raw), F.lit("'"),
    )
    return F.when(raw.isNotNull() & alone.getField(CORRUPT).isNotNull(), message)
