"""The soak's verdict compares the first and last 10 minutes, worst and median minute; its
chart needs matplotlib, checked before the hour, not after."""

from __future__ import annotations

import importlib.util

import pytest
from benchmarks.soak.__main__ import _args
from benchmarks.soak.__main__ import main as soak_main
from benchmarks.soak.chart import verdict
from benchmarks.soak.sample import Minute


def minutes(dws: list[float | None]) -> list[Minute]:
    return [Minute(i, dws_p99=v, query_s={"count": 0.1 * (1 + i // 10)},
                   ods_rows=1_000_000 * (i + 1)) for i, v in enumerate(dws)]


def test_worst_and_median_minutes_of_both_windows() -> None:
    rows = minutes([None, 40.0, *[20.0] * 8, *[15.0] * 10, *[18.0] * 9, 30.0])
    text = verdict(rows)
    assert "worst minute: first 10 minutes 40.00s, last 10 30.00s (ratio 0.75; target ≤ 1.2)" \
        in text
    assert "median minute: 20.00s and 18.00s (ratio 0.90)" in text
    assert "`count` over ODS: minute 10 0.10s, end 0.30s (ratio 3.00" in text
    assert "(10,000,000 → 30,000,000 rows): ratio 1.00" in text


def test_too_short_a_run_says_so() -> None:
    assert verdict(minutes([10.0] * 5)) == "5 minutes: too short for the 10-minute comparisons."


def test_a_missing_matplotlib_stops_the_soak_before_it_runs(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    with pytest.raises(SystemExit) as stopped:
        soak_main(["--minutes", "1"])
    assert stopped.value.code == 2
    assert "pip install -e '.[bench]'" in capsys.readouterr().err
    assert _args(["--no-chart"]).no_chart  # without a chart it may run


def test_each_run_draws_its_own_chart_file() -> None:
    out = _args(["--no-chart"]).out  # the default path, also without matplotlib (CI)
    assert out.parent.name == "img" and out.name.startswith("soak-20")
    assert _args(["--no-chart", "--out", "x.png"]).out.name == "x.png"
