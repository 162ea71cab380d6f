"""Source keys: the text markers hold, parsed and formatted in one place, byte for byte."""

from __future__ import annotations

import dataclasses

import pytest

from icetide.errors import SourceError
from icetide.model.markers import Marker
from icetide.model.source_key import SourceKey

#: Keys as lakes written before SourceKey existed hold them in their markers.
WRITTEN = ["kafka:clicktopic", "iceberg:lake.ods_behavior.clickevent", "mysql:shop",
           "mysql:shop:user_db.products", "mysql:shop:user_db\\..*", "debezium:orders",
           "refresh:lake.ads.top_products", "iceberg:lake.db.t__changelog"]


@pytest.mark.parametrize("text", WRITTEN)
def test_keys_already_in_lakes_round_trip(text: str) -> None:
    key = SourceKey.parse(text)
    assert str(key) == text
    assert SourceKey.parse(str(key)) == key


def test_a_marker_written_with_old_keys_reads_back_the_same_text() -> None:
    summary = {"icetide.flow": "f", "icetide.start": '{"kafka:clicks":{"0":1}}',
               "icetide.pos": '{"iceberg:lake.db.up":{"snapshot":7},"kafka:clicks":{"0":5}}',
               "icetide.rows": "4"}
    marker = Marker.from_summary(summary)
    assert marker is not None
    keys = [SourceKey.parse(k) for k in marker.end]
    assert keys == [SourceKey.iceberg("lake.db.up"), SourceKey.kafka("clicks")]
    assert marker.to_summary()["icetide.pos"] == summary["icetide.pos"]


def test_kind_and_name_split_at_the_first_colon() -> None:
    followed = SourceKey.parse("mysql:shop:user_db.products")
    assert (followed.kind, followed.name) == ("mysql", "shop:user_db.products")
    assert followed.declared == SourceKey("mysql", "shop")
    assert followed.followed == "user_db.products"
    declared = SourceKey.parse("mysql:shop")
    assert declared.declared == declared and declared.followed == ""


def test_a_lake_table_key_names_its_table_below_the_catalog() -> None:
    key = SourceKey.iceberg("lake.ods.clicks")
    assert str(key) == "iceberg:lake.ods.clicks" and key.kind == SourceKey.ICEBERG
    assert key.table("lake") == "ods.clicks"
    assert key.table("other") == "lake.ods.clicks"


def test_keys_are_frozen_values() -> None:
    key = SourceKey.kafka("t")
    assert key == SourceKey("kafka", "t") and len({key, SourceKey("kafka", "t")}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        key.name = "u"  # type: ignore[misc]


@pytest.mark.parametrize("text", ["clicks", ":clicks", "kafka:", ""])
def test_text_that_is_not_a_key_is_refused_with_the_form(text: str) -> None:
    with pytest.raises(SourceError, match=r"is not '<kind>:<name>' \(e\.g\. 'kafka:clicks'"):
        SourceKey.parse(text)
    with pytest.raises(SourceError, match="both parts must be non-empty"):
        SourceKey("kafka", "")


def test_readers_of_the_lake_pass_over_keys_icetide_did_not_write() -> None:
    assert SourceKey.read("n") is None and SourceKey.kind_of("n") is None
    assert SourceKey.read("kafka:t") == SourceKey.kafka("t")
    assert SourceKey.kind_of("refresh:lake.ads.v") == SourceKey.REFRESH
