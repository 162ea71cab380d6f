"""Helpers for the layer tests: a private catalog, CDC-like dimensions, click events."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

from pyspark.sql import SparkSession

from icetide.config import Settings
from icetide.devkit.gen.seed_rows import PRODUCTS, USER_MEMBERS
from icetide.engine.run import PipelineRun
from icetide.engine.targets import ensure_table
from icetide.lake.commit import load_table
from icetide.lake.sinks import MergeSink
from icetide.model.markers import Marker
from icetide.pipelines import load_pipeline
from icetide.pipelines.spec import TableSpec
from icetide.tables.changelog import changelog_table_name
from icetide.tables.merge_engines import Deduplicate

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "clickstream"
PRODUCT_COLS = [("productId", "string"), ("name", "string"), ("description", "string"),
                ("product_price", "decimal(10,4)"), ("update_time", "timestamp")]
MEMBER_COLS = [("userid", "string"), ("name", "string"), ("show_params", "string"),
               ("memberLevel", "int"), ("update_time", "timestamp")]
UIDS = [m[0] for m in USER_MEMBERS] + ["42"]  # "42" is no member


def register_catalog(spark: SparkSession, name: str, warehouse: Path) -> None:
    """A hadoop catalog ``name`` on ``warehouse`` (no catalog cache: flows see each commit)."""
    prefix = f"spark.sql.catalog.{name}"
    spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{prefix}.type", "hadoop")
    spark.conf.set(f"{prefix}.warehouse", str(warehouse))
    spark.conf.set(f"{prefix}.cache-enabled", "false")


def copy_pipeline(dest: Path, catalog: str, topic: str) -> Path:
    """examples/clickstream (ODS + layers), pointed at ``catalog`` and ``topic``."""
    pipeline = dest / "clickstream"
    (pipeline / "layers").mkdir(parents=True)
    for path in [*EXAMPLE.glob("*.py"), *EXAMPLE.glob("layers/*.py"),
                 EXAMPLE / "icetide-pipeline.yml"]:
        shutil.copy(path, pipeline / path.relative_to(EXAMPLE))
    spec = pipeline / "icetide-pipeline.yml"
    text = spec.read_text().replace("catalog: lake", f"catalog: {catalog}")
    spec.write_text(text.replace("topic: clicktopic", f"topic: {topic}"))
    return pipeline


class Dimensions:
    """``dim_db.products`` / ``dim_db.user_member`` as CDC would leave them: PK + changelog."""

    def __init__(self, spark: SparkSession, catalog: str) -> None:
        self.spark, self.catalog, self.batch = spark, catalog, 0

    def upsert(self, table: str, key: str, columns: Sequence[tuple[str, str]],
               rows: Sequence[tuple[object, ...]]) -> None:
        ident = f"{self.catalog}.{table}"
        ensure_table(self.spark, ident, TableSpec(name=table, primary_key=(key,),
                                                  changelog=True), columns)
        schema = ", ".join(f"`{n}` {t}" for n, t in columns)
        df = self.spark.createDataFrame(list(rows), schema)
        sink = MergeSink(Deduplicate("update_time"), (key,),
                         changelog=f"{self.catalog}.{changelog_table_name(table)}")
        marker = Marker("test.cdc", {"n": self.batch}, {"n": self.batch + 1})
        self.batch += 1
        sink.write(self.spark, df, ident, marker.to_summary(), frozenset())

    def seed(self, now: object) -> None:
        self.upsert("dim_db.products", "productId", PRODUCT_COLS,
                    [(*p, now) for p in PRODUCTS])
        self.upsert("dim_db.user_member", "userid", MEMBER_COLS,
                    [(*m, now) for m in USER_MEMBERS])

    def set_price(self, product: str, price: Decimal, now: object) -> None:
        row = next(p for p in PRODUCTS if p[0] == product)
        self.upsert("dim_db.products", "productId", PRODUCT_COLS,
                    [(row[0], row[1], row[2], price, now)])

    def set_level(self, uid: str, level: int, now: object) -> None:
        row = next(m for m in USER_MEMBERS if m[0] == uid)
        self.upsert("dim_db.user_member", "userid", MEMBER_COLS,
                    [(row[0], row[1], row[2], level, now)])


def click_events(first: int, n: int, base_ms: int) -> list[bytes]:
    """``n`` click events; product "1" is the hot key (every second event)."""
    out = []
    for i in range(first, first + n):
        event = {"cookieId": f"c{i}", "expendTime": i % 50, "webpageId": i % 5,
                 "uid": UIDS[i % len(UIDS)], "productId": "1" if i % 2 == 0 else str(2 + i % 8),
                 "updateTime": base_ms + i * 1000}
        out.append(json.dumps(event).encode())
    return out


def produce(bootstrap: str, topic: str, values: Sequence[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    producer.flush(30)


BASE_MS = 1_763_700_000_000
LAYER_TABLES = ("dwd.click_wide", "dws.product_user", "dws.product_views",
                "dws.user_activity", "dws.user_profile", "ads.daily_product_report")


class Lake:
    """A private catalog with the example pipeline pointed at it and a topic."""

    def __init__(self, spark: SparkSession, settings: Settings, cat: str,
                 pipeline: Path, bootstrap: str, topic: str) -> None:
        self.spark, self.settings, self.cat = spark, settings, cat
        self.pipeline = load_pipeline(pipeline)
        self.bootstrap, self.topic = bootstrap, topic
        self.dims = Dimensions(spark, cat)

    def rows(self, sql: str) -> set[tuple[object, ...]]:
        return {tuple(r) for r in self.spark.sql(sql.replace("{c}", self.cat)).collect()}

    def sql(self, sql: str) -> None:
        self.spark.sql(sql.replace("{c}", self.cat))

    def run(self) -> dict[str, int]:
        done = PipelineRun(self.spark, self.settings, self.pipeline).run_once()
        return {name: sum(r.rows for r in results) for name, results in done.items()
                if results and name != "ods_behavior.clickevent"}

    def snapshots(self) -> dict[str, int]:
        return {t: int(load_table(self.spark, f"{self.cat}.{t}").currentSnapshot().snapshotId())
                for t in LAYER_TABLES}
