"""examples/clickstream: each layer's freshness target comes from the pipeline's
configuration (10 s unless set), so a run declares the targets it is held to."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from icetide.pipelines import load_pipeline

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "clickstream"
LAYERS = {"ods": "ods_behavior.clickevent", "dwd": "dwd.click_wide",
          "dws": "dws.product_views"}


def _targets(env: Mapping[str, str], conf: Mapping[str, str] | None = None
             ) -> dict[str, float | None]:
    graph = load_pipeline(EXAMPLE, env=env, configuration=conf)
    return {layer: graph.tables[table].freshness for layer, table in LAYERS.items()}


def test_every_layer_defaults_to_ten_seconds() -> None:
    assert _targets({}) == {"ods": 10.0, "dwd": 10.0, "dws": 10.0}


def test_the_environment_and_conf_set_them() -> None:
    env = {"CLICKSTREAM_FRESHNESS_ODS": "5s", "CLICKSTREAM_FRESHNESS_DWS": "15 seconds"}
    assert _targets(env) == {"ods": 5.0, "dwd": 10.0, "dws": 15.0}
    conf = {"clickstream.freshness.dwd": "8s"}
    assert _targets(env, conf) == {"ods": 5.0, "dwd": 8.0, "dws": 15.0}
