"""``benchmarks.lookup``: its options, the pipeline it derives from the example's flow,
and the report it writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.lookup.__main__ import PATHS, _args, body, headline
from benchmarks.lookup.run import Window, pipeline


def test_bad_options_are_refused() -> None:
    for argv in (["--rows", "0"], ["--hot", "1.5"], ["--rate", "0"]):
        with pytest.raises(SystemExit):
            _args(argv)
    assert _args([]).rows == 10_000_000 and _args([]).rate == 20_000


def test_the_keyed_path_runs_the_examples_flow_on_its_own_names(tmp_path: Path) -> None:
    keyed = PATHS[1]
    folder = pipeline(tmp_path / "p", keyed)
    flow = (folder / "clickevent.py").read_text()
    assert '"dim_db.items"' in flow and '"dim_db.products"' not in flow
    assert f'name="{keyed.target}"' in flow and f'"{keyed.target}_dlq"' in flow
    assert "dp.lookup_join(" in flow
    assert f"topic: {keyed.topic}" in (folder / "icetide-pipeline.yml").read_text()


def test_the_report_gives_each_paths_figures() -> None:
    w = Window(PATHS[1], 20_000, 60, 10_000_000, dim_rows=10_000_000, first_batch_s=31.2,
               fresh=[1.0, 2.0, 3.0, None], cores={"icetide": 1.234, "broker": 0.1},
               batches=30, rows=1_200_000, mismatched=0, join="partitioned (8)")
    text = body(_args(["--broadcast-limit", "0"]), [w], 42.0)
    assert "| keyed (dim_db.items) | 10,000,000 | partitioned (8) | 20,000 | 2.00 s |" in text
    assert "| 1 | 1.23 | 0.10 | 30 | 31.2 s | 1,200,000 | 0 |" in text
    assert "--broadcast-limit 0`" in text and "written in 42.0 s" in text
    assert headline([w]).startswith("at 20,000 clicks/s: keyed (10,000,000 rows): "
                                    "freshness p50/p99 2.00 s /")
