"""benchmarks.peers.flink, the GROUP BY and CDC hops: the jobs' SQL, the CDC connector's
pairing, hop selection, the pipelines icetide runs, and the pure parts of the measurements
(row comparison, commit images, the report lines). No Flink, Spark or MariaDB started."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pyarrow as pa
import pytest
from benchmarks.peers.flink.cdc import CdcCheck
from benchmarks.peers.flink.cdc_load import BATCH, ranges
from benchmarks.peers.flink.groupby import StatsCheck, probe_keys
from benchmarks.peers.flink.measure import Freshness, Throughput
from benchmarks.peers.flink.ours import STATS, STATS_FLOW, cdc_pipeline, groupby_pipeline
from benchmarks.peers.flink.report import cdc_headline, command, groupby_headline
from benchmarks.peers.flink.rows import compare
from benchmarks.peers.flink.run import hops
from benchmarks.peers.flink.snapshots import (
    added_images,
    commits_since,
    first_commits,
    fold_max,
    latencies,
    state_latencies,
)
from benchmarks.peers.flink.sql_hops import (
    CdcOptions,
    HopOptions,
    cdc_spec,
    groupby_spec,
    stats_insert_sql,
)
from benchmarks.peers.flink.versions import CDC_EXCLUDE, CDC_GROUP, DEFAULT, Pairing, cdc_fits

from icetide.devkit.demo.shop import Shop
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.errors import RuntimeSetupError
from icetide.pipelines import load_pipeline

HOP = HopOptions("/tmp/wh", checkpoint_s=10.0, parallelism=2)
DB = CdcOptions("127.0.0.1", 3307, "icetide_cdc", "it's secret")


def test_the_cdc_connector_pairs_with_the_flink_lines_its_release_supports() -> None:
    assert cdc_fits("3.3.0", "1.20.5") and cdc_fits("3.3.0", "1.19.1")
    assert not cdc_fits("3.2.1", "1.20.5")
    with pytest.raises(RuntimeSetupError, match=re.escape("Flink CDC 3.2.1 does not support")):
        Pairing(mysql_cdc="3.2.1").coordinates()
    group = DEFAULT.jar_spec().groups[CDC_GROUP]
    assert group.coordinates == ("org.apache.flink:flink-sql-connector-mysql-cdc:3.3.0",)
    assert group.jvm == "own" and group.exclude == CDC_EXCLUDE


def test_the_groupby_job_reads_ods_as_a_stream_and_upserts_by_product() -> None:
    spec = groupby_spec(HOP, ["/jars/a.jar"])
    assert spec["config"]["execution.checkpointing.interval"] == "10000ms"
    assert spec["config"]["table.exec.sink.upsert-materialize"] == "NONE"
    sink, insert = spec["statements"][-2:]
    assert "PRIMARY KEY (productId) NOT ENFORCED" in sink
    assert "'write.upsert.enabled' = 'true'" in sink
    assert insert == stats_insert_sql()
    assert "FROM peer.ods_behavior.clickevent /*+ OPTIONS('streaming'='true', " \
           "'monitor-interval'='1s'" in insert
    assert "COUNT(uid) AS `views`" in insert  # VIEWS is a keyword
    assert insert.endswith("GROUP BY productId, name, product_price")


def test_the_cdc_job_follows_the_member_table_into_its_primary_key_table() -> None:
    spec = cdc_spec(HOP, DB, ["/jars/cdc.jar"])
    source, catalog, _, sink, insert = spec["statements"]
    assert "'connector' = 'mysql-cdc'" in source
    assert "'password' = 'it''s secret'" in source  # a quoted literal
    assert "'table-name' = 'user_member'" in source and "'port' = '3307'" in source
    assert "'server-time-zone' = 'UTC'" in source
    assert "'scan.incremental.snapshot.backfill.skip' = 'true'" in source
    assert "memberLevel INT" in source and "PRIMARY KEY (userid) NOT ENFORCED" in sink
    assert "'write.upsert.enabled' = 'true'" in sink
    assert "'catalog-type' = 'hadoop'" in catalog and "file:///tmp/wh" in catalog
    assert insert == "INSERT INTO peer.dim_db.user_member SELECT * FROM user_member_cdc"
    assert spec["config"]["execution.checkpointing.interval"] == "10000ms"


def test_hops_are_chosen_by_name_and_run_in_pipeline_order() -> None:
    assert hops("cdc, ods") == ["ods", "cdc"]
    assert hops("groupby") == ["groupby"]
    for bad in ("", "ods,dwd"):
        with pytest.raises(SystemExit, match="--hops"):
            hops(bad)


def test_icetide_runs_the_examples_flows_and_the_statistic(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    graph = load_pipeline(groupby_pipeline(tmp_path / "g", 2.0))
    assert set(graph.flows) == {"ods_behavior.clickevent", STATS_FLOW}
    assert graph.flows[STATS_FLOW].target.endswith(STATS)
    assert graph.tables[STATS].primary_key == ("productId",)
    monkeypatch.delenv("SHOP_PASSWORD", raising=False)
    info = MariaDBInfo("127.0.0.1", 3307, "/tmp/sock", 1, "icetide_cdc", "pw", "app", "pw")
    graph = load_pipeline(cdc_pipeline(tmp_path / "c", 10.0, Shop(info, False)))
    assert "dim_db.user_member" in graph.flows
    assert graph.spec.defaults.trigger_interval == 10.0


def test_rows_are_compared_by_key_and_by_every_column() -> None:
    same = compare([("1", "a", 2), ("2", "b", 3)], [("2", "b", 3), ("1", "a", 2)])
    assert same.same and (same.ours, same.theirs, same.differ) == (2, 2, 0)
    other = compare([("1", "a", 2), ("2", "b", 3)], [("1", "a", 5), ("3", "c", 1)])
    assert not other.same
    assert (other.only_ours, other.only_theirs, other.differ) == (1, 1, 1)


def test_probes_are_matched_to_the_first_commit_holding_them() -> None:
    images = [(1000, ["p1"]), (2000, ["p1", "p2"]), (3000, ["p3"])]
    seen = first_commits(images)
    assert seen == {"p1": 1000, "p2": 2000, "p3": 3000}
    assert latencies([500, 1500, 2000, 2500], ["p1", "p2", "p3", "p4"], seen) == [
        0.5, 0.5, 1.0, None]
    assert probe_keys([object(), object()]) == ["probe-0", "probe-1"]  # type: ignore[list-item]


def test_a_row_value_folded_away_counts_from_the_commit_of_a_later_one() -> None:
    # p2 was overwritten by p3 within one batch: never written, yet held by 3000's state
    seen = {"p1": 2000, "p3": 3000, "p4": 2500}
    assert state_latencies([1000, 1500, 2000, 2400, 2900], ["p1", "p2", "p3", "p4", "p5"],
                           seen) == [1.0, 1.0, 0.5, 0.1, None]


def test_a_count_is_its_highest_image() -> None:
    best: dict[str, int] = {"1": 4}
    fold_max(best, ["1", "2", "2", "1"], [3, 1, 2, 6])
    assert best == {"1": 6, "2": 2}


def test_member_changes_are_cut_in_statements_and_wrap_around() -> None:
    assert ranges(0, 2500, 10_000) == [(0, 999), (1000, 1999), (2000, 2499)]
    assert ranges(9_500, 1_000, 10_000) == [(9_500, 9_999), (0, 499)]
    assert ranges(3, 5, 4) == [(3, 3), (0, 3)]
    assert all(hi - lo + 1 <= BATCH for lo, hi in ranges(7, 12_345, 100_000))
    assert ranges(0, 10, 0) == []


def test_added_images_reads_each_commits_new_data_files(tmp_path: Path) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("db")
    rows = pa.table({"productId": ["1", "2"], "views": [1, 1]})
    table = catalog.create_table("db.t", rows.schema)
    table.append(rows)
    table.append(pa.table({"productId": ["1"], "views": [2]}))
    table = catalog.load_table("db.t")
    commits = commits_since(table)
    assert [c.added_records for c in commits] == [2, 1]
    read = list(added_images(table, ["productId", "views"]))
    assert [r.num_rows for _, r in read] == [2, 1]
    assert [ms for ms, _ in read] == [c.committed_ms for c in commits]
    only = list(added_images(table, ["productId"], skip=[commits[0].snapshot_id],
                             where=[("productId", "=", "1")]))
    assert [r.column("productId").to_pylist() for _, r in only] == [["1"]]
    assert list(added_images(table, ["views"], since_ms=commits[-1].committed_ms + 1)) == []


def _args() -> argparse.Namespace:
    return argparse.Namespace(seconds=60.0, parallelism=2, events=1000, rates="2000",
                              checkpoint=2.0, trigger=2.0, partitions=4, broker="tansu",
                              members=100, changes=50, cdc_rates="100", cdc_checkpoint=10.0)


def test_each_hops_headline_and_command() -> None:
    ours = Throughput(1_000_000, 20.0, {"jvm": 30.0})
    theirs = Throughput(1_000_000, 10.0, {"flink": 20.0})
    window = Freshness(100.0, 60.0, icetide=[4.0, 5.0, 6.0], flink=[2.0, 2.5, 3.0])
    rows = compare([("1", 3)], [("1", 3)])
    line = groupby_headline(ours, theirs, [window], StatsCheck(3, 3, 3, rows))
    assert line == ("icetide vs Flink 1.20.5 (seed 001's GROUP BY): clicks/s 0.50×, CPU-s per "
                    "1M 1.50×; freshness p50 at 100/s 2.00× (5.00s vs 2.50s); same rows")
    assert groupby_headline(ours, None, [], StatsCheck(4, 3, 3, rows)).endswith("ROWS DIFFER")
    line = cdc_headline((ours, theirs), (ours, None), [window], CdcCheck(1, rows, rows))
    assert line == ("icetide vs Flink 1.20.5 (seed 001's mysql-cdc): snapshot rows/s 0.50×, "
                    "CPU-s per 1M 1.50×; freshness p50 at 100 changes/s 2.00× (5.00s vs "
                    "2.50s); same rows")
    assert "--hops cdc" in command(_args(), "cdc") and "--members 100" in command(_args(), "cdc")
    assert "--events 1000" in command(_args(), "groupby")
