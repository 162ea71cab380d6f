"""examples/clickstream: each layer's freshness target comes from ``tables:`` of its
pipeline file (10 s unless the environment sets it), so a run declares the targets it is
held to."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from icetide.pipelines import load_pipeline

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "clickstream"
LAYERS = {"ods": "ods_behavior.clickevent", "dwd": "dwd.click_wide",
          "dws": "dws.product_views"}


def _targets(env: Mapping[str, str]) -> dict[str, float | None]:
    graph = load_pipeline(EXAMPLE, env=env)
    return {layer: graph.tables[table].freshness for layer, table in LAYERS.items()}


def test_every_layer_defaults_to_ten_seconds() -> None:
    assert _targets({}) == {"ods": 10.0, "dwd": 10.0, "dws": 10.0}


def test_the_environment_sets_them() -> None:
    env = {"CLICKSTREAM_FRESHNESS_ODS": "5s", "CLICKSTREAM_FRESHNESS_DWS": "15 seconds"}
    assert _targets(env) == {"ods": 5.0, "dwd": 10.0, "dws": 15.0}
