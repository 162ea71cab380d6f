"""benchmarks.brokers: its options, memory reading and table (no broker started)."""

from __future__ import annotations

import os

from benchmarks.brokers.__main__ import Figures, _args, rss_mib, table
from benchmarks.freshness.__main__ import _args as freshness_args


def test_rss_of_this_process_and_of_none() -> None:
    assert 5 < rss_mib(os.getpid()) < 100_000
    assert rss_mib(None) == 0.0


def test_the_table_names_every_broker_and_what_tansu_cannot_keep() -> None:
    a = _args(["--starts", "2", "--events", "1000"])
    rows = [Figures("tansu", [0.5, 0.7], [], 14, 90_000, 400_000, 60, 3.0),
            Figures("kafka", [6.0, 5.0], [4.0, 4.2], 310, 120_000, 500_000, 420, 9.5)]
    text = table(rows, a)
    assert "--starts 2 --events 1000 --partitions 4 --brokers tansu,kafka" in text
    assert "| tansu | 0.60 s | — (nothing kept) | 14 MiB | 90,000 ev/s |" in text
    assert "| kafka | 5.50 s | 4.10 s | 310 MiB | 120,000 ev/s | 500,000 ev/s | 420 MiB" in text


def test_the_ingest_benchmarks_take_a_broker() -> None:
    assert freshness_args([]).broker == "tansu"
    assert freshness_args(["--broker", "kafka"]).broker == "kafka"
