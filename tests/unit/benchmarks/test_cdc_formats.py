"""``python -m benchmarks.cdc --formats``: its options, how a write's freshness is found
from the lake's commits, the numbers of its report, the flows it writes per format."""

from __future__ import annotations

import math

import pytest
from benchmarks.cdc.__main__ import _args
from benchmarks.cdc.format_report import (
    LakeCommit,
    Tick,
    achieved,
    apply_rows,
    cpu_per_million,
    freshness_ms,
    freshness_rows,
    parse_formats,
    parse_rates,
    percentile,
)
from benchmarks.cdc.formats import flows, rates_of


def test_formats_are_named_and_kept_in_report_order() -> None:
    assert parse_formats("hudi_cow, iceberg") == ["iceberg", "hudi_cow"]
    with pytest.raises(SystemExit, match=r"'iceberg,delta': delta is not a format; give "
                                         r"some of iceberg, hudi_mor, hudi_cow"):
        parse_formats("iceberg,delta")
    with pytest.raises(SystemExit, match="nothing is not a format"):
        parse_formats(" , ")


def test_rates_are_numbers_or_the_snapshot_rate() -> None:
    assert parse_rates("2, snapshot") == ["2", "snapshot"]
    for bad in ("0", "fast"):
        with pytest.raises(SystemExit, match=rf"{bad!r} is neither a number"):
            parse_rates(f"2,{bad}")
    applied = {"iceberg": {"snapshot_rps": 9000.0}, "hudi_cow": {"snapshot_rps": 4000.4}}
    assert rates_of("2,snapshot", applied) == {"2": 2.0, "4,000 (the snapshot rate)": 4000.4}


def test_the_options_select_the_format_comparison() -> None:
    a = _args(["--formats", "iceberg,hudi_mor", "--rows", "2000", "--updates", "500",
               "--rates", "2", "--freshness-seconds", "5", "--no-doc"])
    assert (a.formats, a.rows, a.updates, a.rates, a.freshness_seconds, a.no_doc) == (
        "iceberg,hudi_mor", 2000, 500, "2", 5.0, True)
    plain = _args([])
    assert (plain.formats, plain.rates, plain.freshness_seconds) == ("", "2,snapshot", 60.0)


def test_each_format_gets_one_cdc_flow_from_the_same_table() -> None:
    assert 'items_iceberg", primary_key=["id"])' in flows("iceberg")
    assert 'format="hudi", table_properties={"hoodie.table.type": "MERGE_ON_READ"}' in flows(
        "hudi_mor")
    assert '"COPY_ON_WRITE"' in flows("hudi_cow")
    assert all('table="bench_shop.items"' in flows(n) for n in ("iceberg", "hudi_cow"))


def test_a_writes_freshness_is_the_first_commit_at_or_past_its_binlog_position() -> None:
    ticks = [Tick(1000, (1, 500)), Tick(1500, (1, 900)), Tick(2000, (2, 100)),
             Tick(2500, (2, 300))]
    commits = [LakeCommit(3100, (2, 150)), LakeCommit(1700, (1, 600)),
               LakeCommit(900, (1, 999))]  # before the write: not its commit
    assert freshness_ms(ticks, commits) == [700, 1600, 1100]  # the last: never committed


def test_percentiles_cpu_and_report_rows() -> None:
    assert percentile([5, 1, 3, 2, 4], 50) == 3 and percentile([5, 1, 3], 100) == 5
    assert percentile(list(range(1, 101)), 99) == 99 and math.isnan(percentile([], 50))
    assert cpu_per_million(12.5, 250_000) == 50.0
    row = apply_rows(1000, {"hudi_mor": {"apply_rps": 2500.0, "apply_s": 0.4,
                                         "apply_batches": 1, "apply_cpu_s": 0.9,
                                         "snapshot_rps": 1234.0}})
    assert row == ("| Hudi merge-on-read upsert: apply of 1,000 updates | 2,500 rows/s (0.4s, "
                   "1 batch(es)), 900 CPU-s per 1 M changes; snapshot 1,234 rows/s |\n")
    fresh = freshness_rows({"iceberg": {"2": [1000, 3000, 2000]}},
                           {"iceberg": {"2": (4, 1.95)}})
    assert fresh == ("| Iceberg MERGE (merge-on-read deletes): freshness at 2 changes/s | "
                     "p50 2.00s, p99 3.00s, max 3.00s (4 writes, 1.9 rows/s reached, 1 not "
                     "committed in the window) |\n")
    assert achieved([Tick(0, (1, 1), 2000), Tick(100, (1, 2), 1500)], 0.5) == 7000.0
