"""Debezium MySQL and PostgreSQL connectors' default messages, with and without schemas,
through the real flow (real broker, Spark, Iceberg): precise decimals and MySQL's
``TINYINT(1)`` land in the declared ``decimal``/``boolean`` columns; values a declared type
cannot hold go to the dead-letter table with the column and both types named, and the rest
of the batch commits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cdc_pipeline_helpers import lake_rows, unique
from pyspark.sql import SparkSession
from tests.brokers import BOTH
from tests.unit.sources.debezium.connectors import COLUMNS, PG_COLUMNS, message, row

from icetide.config import Settings
from icetide.engine.run import PipelineRun
from icetide.pipelines import load_pipeline

pytestmark = [pytest.mark.kafka, pytest.mark.spark, BOTH]

FLOWS = '''
from icetide import pipelines as dp
from icetide.sources import debezium

for name in ("mysql_products", "pg_products"):
    dp.create_streaming_table(f"{lake_db}.{{name}}", primary_key=["id"])
    dp.create_auto_cdc_flow(target=f"{lake_db}.{{name}}", source=debezium.changes(name),
                            keys=["id"], sequence_by="_pos")
'''
SHOWN = ["id", "name", "price", "in_stock", "qty", "born", "created", "updated"]


def _pipeline(tmp_path: Path, broker: str, topics: dict[str, str], lake_db: str) -> Path:
    folder = tmp_path / "p"
    folder.mkdir()
    sources = "".join(
        f"  {name}: {{type: debezium, topic: {topic}, bootstrap: '{broker}', "
        f"table: inv.{name}, primary_key: [id], columns: {json.dumps(columns)}}}\n"
        for (name, topic), columns in zip(topics.items(), (COLUMNS, PG_COLUMNS), strict=True))
    (folder / "icetide-pipeline.yml").write_text(
        f"name: {lake_db}\ncatalog: lake\ndatabase: {lake_db}\nsources:\n{sources}")
    (folder / "flows.py").write_text(FLOWS.format(lake_db=lake_db))
    return folder


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, key=b'{"id": 0}', value=value)
    producer.flush(10)


def _expected(i: int, price: str, in_stock: str) -> tuple[Any, ...]:
    return (str(i), f"item {i}", price, in_stock, str(2**40 + i), "2024-01-02",
            "2024-01-02 03:04:05", "2024-01-02 03:04:05")


def test_connector_messages_land_typed_and_mismatches_are_dead_letters(
        broker: str, kafka_topic: Any, spark: SparkSession, icetide_settings: Settings,
        tmp_path: Path) -> None:
    lake_db = unique("dbzc")
    topics = {"mysql_products": kafka_topic(1), "pg_products": kafka_topic(1)}
    folder = _pipeline(tmp_path, broker, topics, lake_db)
    mysql = [
        message("mysql", "2.x", "r", after=row("mysql", 1, "12.34"), schemas=False),
        message("mysql", "3.x", "c", after=row("mysql", 2, "-99999.9999", in_stock=0)),
        message("mysql", "2.x", "c", after=row("mysql", 3, "1", in_stock=2)),  # dead letter
        message("mysql", "3.x", "c", after=row("mysql", 4, "1234567.8901"), schemas=False),
        message("mysql", "3.x", "c", after={**row("mysql", 5, "1"), "qty": "many"},
                schemas=False),  # dead letter
        message("mysql", "2.x", "u", before=row("mysql", 1, "12.34"),
                after=row("mysql", 1, "0.0001", in_stock=0), schemas=False),
    ]
    postgres = [
        message("postgresql", "3.x", "c", after=row("postgresql", 1, "7.5", ratio="0.125"),
                schemas=False),
        message("postgresql", "2.x", "c", after=row("postgresql", 2, "8", ratio="2.5")),
        message("postgresql", "3.x", "c", after=row("postgresql", 3, "9", ratio="1.2345678"),
                schemas=False),  # dead letter: 7 decimals into decimal(20,6)
    ]
    _produce(broker, topics["mysql_products"], mysql)
    _produce(broker, topics["pg_products"], postgres)
    with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
        run.run_once()

    my_ident, pg_ident = f"lake.{lake_db}.mysql_products", f"lake.{lake_db}.pg_products"
    assert lake_rows(spark, my_ident, SHOWN) == {
        _expected(1, "0.0001", "false"), _expected(2, "-99999.9999", "false")}
    assert lake_rows(spark, pg_ident, [*SHOWN, "ratio"]) == {
        (*_expected(1, "7.5000", "true"), "0.125000"),
        (*_expected(2, "8.0000", "true"), "2.500000")}
    my_dlq = spark.table(f"{my_ident}_dlq").orderBy("offset").collect()
    assert [r["offset"] for r in my_dlq] == [2, 3, 4]
    assert [r["raw"] for r in my_dlq] == mysql[2:5]
    reasons = [r["error"] for r in my_dlq]
    assert reasons[0].startswith("column 'in_stock': cannot read 2 (int16) as boolean")
    assert reasons[1].startswith("column 'price': cannot read 'At/cHDU=' (JSON string) as "
                                 "decimal(10,4): 1234567.8901 needs more than 6 digits")
    assert reasons[2].startswith("column 'qty': cannot read 'many' (JSON string) as bigint")
    pg_dlq = spark.table(f"{pg_ident}_dlq").collect()
    assert [r["offset"] for r in pg_dlq] == [2]
    assert pg_dlq[0]["error"].startswith(
        "column 'ratio': cannot read {'scale': 7, 'value': 'ALxhTg=='} (JSON object) as "
        "decimal(20,6): 1.2345678 has more than 6 digits after the point")
