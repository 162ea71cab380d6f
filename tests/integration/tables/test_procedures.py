"""Iceberg's history through icetide: time travel in ``icetide sql`` (Spark), tags and
branches by ``icetide call``, rollback, and retention — maintenance keeps what a tag names,
``describe`` shows the refs and how far back time travel reaches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

from icetide.app.context import Context
from icetide.cli.query_cmds import describe
from icetide.config import MaintenanceConfig, Settings

pytestmark = pytest.mark.spark


def _count(ctx: Context, version: str) -> int:
    return int(str(ctx.sql(f"SELECT count(*) FROM hist.t {version}").rows[0][0]))


def _snapshots(spark: SparkSession) -> list[tuple[int, str]]:
    return [(r.snapshot_id, r.at) for r in spark.sql(
        "SELECT snapshot_id, cast(committed_at AS string) at FROM lake.hist.t.snapshots "
        "ORDER BY committed_at").collect()]


def _described(settings: Settings, tmp_path: Path) -> dict[str, object]:
    config = tmp_path / "icetide.yaml"
    config.write_text(yaml.safe_dump(settings.model_dump(mode="json", exclude_none=True)))
    text = CliRunner().invoke(describe, ["hist.t", "--config", str(config)])
    assert text.exit_code == 0, text.output
    assert "Tags and branches" in text.output and "time travel: back to" in text.output
    shown = CliRunner().invoke(describe, ["hist.t", "--format", "json", "--config", str(config)])
    return dict(json.loads(shown.output))


def test_time_travel_tags_rollback_and_retention_on_spark(
        spark: SparkSession, icetide_settings: Settings, tmp_path: Path) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.hist")
    spark.sql("DROP TABLE IF EXISTS lake.hist.t")
    spark.sql("CREATE TABLE lake.hist.t (id bigint) USING iceberg")
    for i in range(4):
        spark.sql(f"INSERT INTO lake.hist.t VALUES ({i})")
    (s0, _), (s1, at1), _, (s3, at3) = _snapshots(spark)
    ctx = Context(icetide_settings)
    ctx._spark = spark

    assert _count(ctx, f"VERSION AS OF {s0}") == 1
    assert _count(ctx, f"TIMESTAMP AS OF '{at1}'") == 2
    ctx.call(f"system.create_tag(table => 'hist.t', tag => 'first', snapshot_id => {s0})")
    ctx.call("system.create_branch(table => 'hist.t', branch => 'dev')")  # at s3
    assert _count(ctx, "VERSION AS OF 'first'") == 1

    ctx.call(f"system.rollback_to_timestamp(table => 'hist.t', timestamp => TIMESTAMP '{at3}')")
    assert _count(ctx, "") == 3  # the last snapshot before s3
    ctx.call(f"system.rollback_to_snapshot(table => 'hist.t', snapshot_id => {s1})")
    assert _count(ctx, "") == 2

    policy = MaintenanceConfig(snapshot_retention=0, retain_last=1)
    ctx.settings = icetide_settings.model_copy(update={"maintenance": policy})
    [report] = ctx.maintain(["hist.t"])
    assert report.actions.expiry.snapshots == 1  # s2: neither current nor named
    assert {s for s, _ in _snapshots(spark)} == {s0, s1, s3}  # the tag's and branch's kept
    assert (_count(ctx, "VERSION AS OF 'first'"), _count(ctx, "VERSION AS OF 'dev'")) == (1, 4)

    info = _described(icetide_settings, tmp_path)
    assert info["refs"] == [
        {"name": "dev", "type": "branch", "snapshot_id": s3, "max_ref_age_ms": None},
        {"name": "first", "type": "tag", "snapshot_id": s0, "max_ref_age_ms": None}]
    travel = info["time_travel"]
    assert isinstance(travel, dict)
    assert (travel["oldest_snapshot_id"], travel["snapshots_kept"]) == (s0, 3)

    ctx.call("system.drop_tag(table => 'hist.t', tag => 'first')")
    ctx.maintain(["hist.t"])
    assert {s for s, _ in _snapshots(spark)} == {s1, s3}  # untagged: expired at last
