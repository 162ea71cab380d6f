"""engine.order: the flows nearest the sources are compiled first (no Spark)."""

from __future__ import annotations

from pathlib import Path

from icetide.engine.order import depths, named_tables
from icetide.pipelines import load_pipeline

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "clickstream"


def test_the_clickstream_layers_are_ordered_from_the_sources_up() -> None:
    graph = load_pipeline(EXAMPLE, configuration={"clickstream.dims": "cdc"})
    hops = depths(graph.flows, graph.tables)
    assert hops["dim_db.products"] == 0  # CDC: no query, no table read
    assert hops["ods_behavior.clickevent"] == 1  # joins dim_db.products
    assert hops["ods_behavior.clickevent"] < hops["dwd.click_wide"] < hops["dws.count_views_uv"]
    ods = graph.flows["ods_behavior.clickevent"]
    assert named_tables(ods, graph.tables) == {"dim_db.products"}  # its own target aside
