"""benchmarks/query: the report of cold and warm p50/p95 per engine and seed query."""

from __future__ import annotations

import argparse

import pytest
from benchmarks.query.__main__ import ENGINES, QUERIES, Timings, _report


def test_report_has_every_engine_and_query(capsys: pytest.CaptureFixture[str]) -> None:
    t = Timings(groups={e: 9 for e in ENGINES})
    for i, engine in enumerate(ENGINES):
        t.start[engine] = [float(i + 1)]
        for query in QUERIES:
            t.cold[engine, query] = [1.0, 2.0]
            t.warm[engine, query] = [0.1 * (i + 1)] * 3
    _report(argparse.Namespace(rows=1000, runs=3, cold=2, no_doc=True), t)
    out = capsys.readouterr().out
    trino = "| Trino 476 (`--engine trino`) | GROUP BY | 1500 ms | 1950 ms | 300 ms | 300 ms |"
    assert trino in out
    assert "| DuckDB (`--engine duckdb`) | limit 100 |" in out
    assert "not in the cold times): spark 1.0 s, duckdb 2.0 s, trino 3.0 s" in out


def test_warm_only(capsys: pytest.CaptureFixture[str]) -> None:
    t = Timings(groups={"spark": 9})
    for engine in ENGINES:
        for query in QUERIES:
            t.warm[engine, query] = [0.5]
    _report(argparse.Namespace(rows=1000, runs=1, cold=0, no_doc=True), t)
    out = capsys.readouterr().out
    assert "| Spark (`icetide sql`) | limit 100 | - | - | 500 ms | 500 ms |" in out
