"""``benchmarks.freshness`` compares two settings in one run: labels and environments."""

from __future__ import annotations

import pytest
from benchmarks.freshness.__main__ import _args, _env, _labels


def test_a_checkout_comparison_is_before_and_after() -> None:
    assert _labels(_args(["--compare", "/tmp/x"])) == ("before", "after")


def test_a_trigger_comparison_names_both_intervals() -> None:
    assert _labels(_args(["--compare-trigger", "2", "--trigger", "3"])) == (
        "trigger 2s", "trigger 3s")
    assert _labels(_args(["--compare-trigger", "2"])) == ("trigger 2s", "trigger default")


def test_an_environment_comparison_names_both_settings() -> None:
    a = _args(["--compare-env", "ICETIDE_SPARK__SHUFFLE_PARTITIONS=4",
               "--env", "ICETIDE_SPARK__SHUFFLE_PARTITIONS=2"])
    assert _labels(a) == ("ICETIDE_SPARK__SHUFFLE_PARTITIONS=4",
                          "ICETIDE_SPARK__SHUFFLE_PARTITIONS=2")
    assert _env(a.env) == {"ICETIDE_SPARK__SHUFFLE_PARTITIONS": "2"}
    assert _env(["A=b=c"]) == {"A": "b=c"}  # only the first '=' splits


@pytest.mark.parametrize("item", ["NOVALUE", "=2"])
def test_a_malformed_setting_stops_before_the_run(item: str) -> None:
    with pytest.raises(SystemExit, match="write KEY=VALUE"):
        _env([item])
