"""The dashboard's DAG and dead-letter helpers (pure)."""

from __future__ import annotations

import pytest

from icetide.app.dashboard import (
    DashboardState,
    TableActivity,
    _upstream_keys,
    build_dag,
    dead_letters_query,
    layer_of,
    to_dead_letters,
)
from icetide.app.status import TableStatus
from icetide.errors import TableError
from icetide.model.markers import Marker


def test_tables_are_layered_by_the_words_of_their_database() -> None:
    assert layer_of("ods_behavior.clickevent") == "ODS"
    assert layer_of("st_dws.per_user") == "DWS"
    assert layer_of("dwd.click_wide") == "DWD" and layer_of("ads.report") == "ADS"
    assert layer_of("dim_db.products") == "CDC dimensions"
    assert layer_of("shop.products", cdc=True) == "CDC dimensions"
    assert layer_of("misc.t") == "other"


def test_the_dag_follows_the_source_keys_of_the_markers() -> None:
    rows = [TableStatus("ods.clicks", state="ok"), TableStatus("dwd.wide", state="fail"),
            TableStatus("dim_db.products", state="-")]
    activity = {
        "ods.clicks": TableActivity("ods.clicks", sources=("kafka:clicktopic",)),
        "dwd.wide": TableActivity("dwd.wide", sources=("iceberg:lake.ods.clicks",)),
        "dim_db.products": TableActivity("dim_db.products",
                                         sources=("mysql:shop:user_db.products",)),
    }
    dag = build_dag(rows, activity, None, "lake")
    assert set(dag.edges) == {("kafka:clicktopic", "ods.clicks"), ("ods.clicks", "dwd.wide"),
                              ("mysql:shop:user_db.products", "dim_db.products")}
    assert dag.layers() == [
        ("sources", ["kafka:clicktopic", "mysql:shop:user_db.products"]),
        ("ODS", ["ods.clicks"]), ("CDC dimensions", ["dim_db.products"]),
        ("DWD", ["dwd.wide"])]
    assert {n.name: n.state for n in dag.nodes}["dwd.wide"] == "fail"


def test_a_marker_key_icetide_did_not_write_is_shown_as_a_source() -> None:
    rows = [TableStatus("misc.t", state="-")]
    dag = build_dag(rows, {"misc.t": TableActivity("misc.t", sources=("n",))}, None, "lake")
    assert set(dag.edges) == {("n", "misc.t")}


def test_dead_letter_rows_keep_their_origin_and_raw_value() -> None:
    sql = dead_letters_query("ods.clicks_dlq", 5)
    assert '"ods"."clicks_dlq"' in sql and sql.endswith("LIMIT 5")
    with pytest.raises(TableError, match="not a name"):
        dead_letters_query("ods.x; DROP TABLE y", 5)
    [row] = to_dead_letters([("f", "kafka:t", "t", 1, 42, None, b"{bad", "malformed JSON",
                              "2026-01-01 00:00:00", "2026-01-01 00:00:01")])
    assert (row.topic, row.partition, row.offset, row.raw) == ("t", 1, 42, "{bad")


def test_dead_letter_tables_and_refresh_positions_are_not_nodes() -> None:
    rows = [TableStatus("ods.clicks"), TableStatus("ods.clicks_dlq"), TableStatus("ads.r")]
    activity = {
        "ods.clicks": TableActivity("ods.clicks", sources=("kafka:t",)),
        "ods.clicks_dlq": TableActivity("ods.clicks_dlq", sources=("kafka:t",)),
        "ads.r": TableActivity("ads.r", sources=("refresh:lake.ads.r",)),
    }
    dag = build_dag(rows, activity, None, "lake", side_tables=["ods.clicks_dlq"])
    assert dag.layers() == [("sources", ["kafka:t"]), ("ODS", ["ods.clicks"]),
                            ("ADS", ["ads.r"])]
    assert dag.edges == (("kafka:t", "ods.clicks"),)


def test_a_materialized_view_is_fed_by_the_inputs_its_refresh_position_names() -> None:
    marker = Marker("ads.r", start={}, end={"refresh:lake.ads.r": {"lake.dws.a": 1,
                                                                   "lake.dws.b": None}})
    assert sorted(_upstream_keys(marker)) == ["iceberg:lake.dws.a", "iceberg:lake.dws.b"]
    kafka = Marker("ods.c", start={}, end={"kafka:t": {"0": 5}})
    assert _upstream_keys(kafka) == ["kafka:t"]


def test_the_page_names_where_engines_reach_the_catalog() -> None:
    state = DashboardState(0, None, (), catalog="thrift://127.0.0.1:41234")
    assert state.to_json()["catalog"] == "thrift://127.0.0.1:41234"
