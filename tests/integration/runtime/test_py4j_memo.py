"""py4j name look-ups are answered once per gateway (icetide.runtime.py4j_memo)."""

from __future__ import annotations

from py4j.java_gateway import JavaClass, JavaMember, JavaPackage
from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def test_classes_packages_and_static_methods_resolve_once(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    first = jvm.org.apache.iceberg.spark.Spark3Util
    assert isinstance(first, JavaClass)
    assert jvm.org.apache.iceberg.spark.Spark3Util is first
    assert isinstance(jvm.org.apache.iceberg, JavaPackage)
    assert jvm.org.apache.iceberg is jvm.org.apache.iceberg
    assert jvm.functions is jvm.functions  # pyspark resolves it on every F.col
    method = jvm.java.lang.Integer.parseInt
    assert isinstance(method, JavaMember) and jvm.java.lang.Integer.parseInt is method
    assert method("42") == 42  # a remembered static method still calls the JVM


def test_fields_are_read_each_time_and_the_api_still_works(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    assert jvm.java.lang.Integer.MAX_VALUE == 2**31 - 1  # a field's value, not remembered
    rows = spark.range(5).select((F.col("id") * 2).alias("x")).where(F.col("x") > 4).collect()
    assert [r.x for r in rows] == [6, 8]
