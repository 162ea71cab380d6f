"""Debezium JSON envelopes from Kafka through the same CDC apply path (real broker, Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cdc_pipeline_helpers import lake_rows, unique
from pyspark.sql import SparkSession
from tests.brokers import BOTH

from icetide.config import Settings
from icetide.engine.run import PipelineRun
from icetide.pipelines import load_pipeline

pytestmark = [pytest.mark.kafka, pytest.mark.spark, BOTH]

FLOWS = '''
from icetide import pipelines as dp
from icetide.sources import debezium

dp.create_streaming_table("{lake_db}.products", primary_key=["id"], changelog=True)
dp.create_auto_cdc_flow(target="{lake_db}.products", source=debezium.changes("dbz"),
                        keys=["id"], sequence_by="_pos")
'''
COLS = ["id", "name", "price", "updated"]


def _envelope(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
              with_schema: bool) -> bytes:
    payload = {"before": before, "after": after, "op": op, "ts_ms": 1_700_000_000_000,
               "source": {"db": "inv", "table": "products"}}
    body = {"schema": {"type": "struct", "name": "envelope"}, "payload": payload} \
        if with_schema else payload
    return json.dumps(body).encode()


def _produce(bootstrap: str, topic: str, events: list[tuple[int, bytes | None]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in events:
        producer.produce(topic, key=json.dumps({"id": key}).encode(), value=value)
    producer.flush(10)


def _row(i: int, name: str, price: str, updated: Any) -> dict[str, Any]:
    return {"id": i, "name": name, "price": price, "updated": updated}


def _schema_driven(tmp_path: Path, broker: str, topic: str, lake_db: str) -> Path:
    """A pipeline following ``topic`` into ``<lake_db>.items``, no columns declared."""
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text(
        f"name: {lake_db}\ncatalog: lake\ndatabase: {lake_db}\nsources:\n"
        f"  dbz: {{type: debezium, topic: {topic}, bootstrap: '{broker}', table: inv.items, "
        "primary_key: [id]}\n")
    (folder / "flows.py").write_text(FLOWS.format(lake_db=lake_db).replace("products", "items"))
    return folder


def test_debezium_envelopes_with_and_without_schema(
        broker: str, kafka_topic: Any, spark: SparkSession, icetide_settings: Settings,
        tmp_path: Path) -> None:
    topic, lake_db = kafka_topic(1), unique("dbz")
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text(
        f"name: dbz\ncatalog: lake\ndatabase: {lake_db}\nsources:\n"
        f"  dbz: {{type: debezium, topic: {topic}, bootstrap: '{broker}', table: inv.products, "
        "primary_key: [id], columns: {id: int, name: string, price: 'decimal(10,4)', "
        "updated: timestamp}}\n")
    (folder / "flows.py").write_text(FLOWS.format(lake_db=lake_db))
    one, two = _row(1, "a", "1.5000", 1_700_000_000_000), _row(2, "b", "2.2500", None)
    three = _row(3, "c", "3", "2024-01-02T03:04:05Z")
    _produce(broker, topic, [
        (1, _envelope("r", None, one, True)), (2, _envelope("r", None, two, False)),
        (3, _envelope("c", None, three, True)),
        (1, _envelope("u", one, {**one, "name": "a2", "updated": 1_700_000_060_000}, False)),
        (2, _envelope("d", two, None, True)), (2, None),  # delete + tombstone
        (3, _envelope("u", three, {**three, "price": "3.1234"}, False)),
    ])
    ident = f"lake.{lake_db}.products"
    PipelineRun(spark, icetide_settings, load_pipeline(folder)).run_once()
    assert lake_rows(spark, ident, COLS) == {
        ("1", "a2", "1.5000", "2023-11-14 22:14:20"), ("3", "c", "3.1234", "2024-01-02 03:04:05")}

    _produce(broker, topic, [(3, _envelope("d", three, None, True)), (3, None),
                             (4, _envelope("c", None, _row(4, "d", "4", None), True))])
    PipelineRun(spark, icetide_settings, load_pipeline(folder)).run_once()
    assert lake_rows(spark, ident, COLS) == {
        ("1", "a2", "1.5000", "2023-11-14 22:14:20"), ("4", "d", "4.0000", None)}
    ops = [r["_op"] for r in spark.table(f"{ident}__changelog").where("id = 3")
           .orderBy("_seq").collect()]
    assert ops == ["+I", "-D"]


def test_debezium_types_by_schema_columns_from_the_envelope_and_dead_letters(
        broker: str, kafka_topic: Any, spark: SparkSession, icetide_settings: Settings,
        tmp_path: Path) -> None:
    """Messages shaped as Debezium 2.x writes them: every logical type decoded by its schema,
    the table's columns learnt from the envelope (none declared), bad messages to the
    flow's dead-letter table with their offsets and reasons while the rest commits."""
    from tests.unit.sources.debezium.test_decode import FIELDS
    from tests.unit.sources.debezium.test_decode import _envelope as documented

    topic, lake_db = kafka_topic(1), unique("dbzs")
    folder = _schema_driven(tmp_path, broker, topic, lake_db)
    image = {f["field"]: value for f, value, _ in FIELDS}
    bad = [b"not json", b'{"hello": "world"}', json.dumps({"op": "x", "after": {"id": 9}}).encode(),
           json.dumps({"op": "c", "before": None}).encode(),
           json.dumps({"op": "c", "after": {"id": "twelve"}}).encode()]
    _produce(broker, topic, [(1, documented("c", image)), *[(9, b) for b in bad],
                             (2, documented("c", {**image, "id": 2}))])
    with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
        run.run_once()
    ident = f"lake.{lake_db}.items"
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    rows = {r["id"]: r.asDict() for r in spark.table(ident).collect()}
    assert sorted(rows) == [2, 1004]
    expected = {f["field"]: decoded for f, _, decoded in FIELDS}
    got = rows[1004]
    assert got["price"] == expected["price"] and got["refund"] == expected["refund"]
    assert got["ratio"] == expected["ratio"] and got["born"] == expected["born"]
    assert got["opens"] == "12:34:56.789000" and got["closes"] == "12:34:56.789012"
    assert got["attrs"] == '{"color": "red"}' and got["size"] == "large"
    assert got["active"] is True and got["big"] == 2**40 and got["blob"] == b"\x00\xff"
    stamps = spark.sql(f"SELECT date_format(updated, 'yyyy-MM-dd HH:mm:ss.SSSSSS') u, "
                       f"date_format(seen, 'yyyy-MM-dd HH:mm:ss.SSSSSS') s, "
                       f"date_format(stamped, 'yyyy-MM-dd HH:mm:ss.SSS') z FROM {ident} "
                       "WHERE id = 1004").collect()[0]
    assert (stamps.u, stamps.s, stamps.z) == ("2023-11-14 22:13:20.123456",
                                              "2023-11-14 22:13:20.123456",
                                              "2023-11-14 22:13:20.500")
    dlq = spark.table(f"{ident}_dlq").orderBy("offset").collect()
    assert [r["offset"] for r in dlq] == [1, 2, 3, 4, 5] and [r["raw"] for r in dlq] == bad
    reasons = [r["error"] for r in dlq]
    assert "not JSON" in reasons[0] and "no 'op' field" in reasons[1]
    assert "op='x'" in reasons[2] and "without 'after'" in reasons[3]
    assert "cannot read 'twelve'" in reasons[4]
    assert {r["topic"] for r in dlq} == {topic} and {r["partition"] for r in dlq} == {0}


def test_a_new_column_in_a_later_schema_evolves_the_table(
        broker: str, kafka_topic: Any, spark: SparkSession, icetide_settings: Settings,
        tmp_path: Path) -> None:
    from tests.unit.sources.debezium.test_decode import FIELDS
    from tests.unit.sources.debezium.test_decode import _envelope as documented

    topic, lake_db = kafka_topic(1), unique("dbze")
    folder = _schema_driven(tmp_path, broker, topic, lake_db)
    fields = [FIELDS[0][0], FIELDS[1][0]]  # id, price
    _produce(broker, topic, [(1, documented("c", {"id": 1, "price": FIELDS[1][1]},
                                            fields=fields))])
    with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
        run.run_once()
    color = {"type": "string", "optional": True, "field": "color"}
    _produce(broker, topic, [(2, documented("c", {"id": 2, "price": FIELDS[1][1],
                                                  "color": "red"}, fields=[*fields, color]))])
    with PipelineRun(spark, icetide_settings, load_pipeline(folder)) as run:
        run.run_once()
    rows = {r["id"]: r["color"] for r in spark.table(f"lake.{lake_db}.items").collect()}
    assert rows == {1: None, 2: "red"}
