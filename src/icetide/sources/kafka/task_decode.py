"""The Python reader's decoding (``kafka.reader=python``): the reader tasks decode the
values themselves (:class:`~icetide.sources.kafka.arrow_decode.JsonDecoder`), and only
the records they defer (malformed, wrong types, or anything they cannot prove Spark reads
the same way) are parsed by Spark with :mod:`.decode`'s functions, so both readers share
one definition of valid and one set of reasons.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from icetide.sources.kafka.arrow_decode import TAIL_FIELDS, JsonDecoder
from icetide.sources.kafka.decode import (
    CORRUPT,
    check_schema,
    explain_error,
    json_options,
    with_corrupt,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

#: Columns the reader tasks add after the schema's.
RESERVED = tuple(n for n, _ in TAIL_FIELDS)


def python_decoder(schema: StructType, required: Sequence[str] = ()) -> JsonDecoder | None:
    """The in-task decoder for ``schema``, or ``None`` if its types need Spark's parser."""
    check_schema(schema, required, RESERVED)
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

    check_schema(schema, required, RESERVED)
    deferred = F.col("_deferred")
    text = F.col("_value").cast("string")
    parsed = frame.select(
        "*",
        F.when(deferred, F.from_json(text, with_corrupt(schema.fields), json_options()))
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
