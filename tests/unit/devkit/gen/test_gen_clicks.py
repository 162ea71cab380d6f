"""The DataGen2 click generator: field formats, malformed kinds and pacing (no broker)."""

from __future__ import annotations

import string
import time
from collections import Counter

import orjson
import pytest

from icetide.devkit.gen.clicks import (
    MALFORMED_KINDS,
    PRODUCT_IDS,
    UIDS,
    VALID,
    ClickGenerator,
    Pacer,
)
from icetide.errors import SourceError

FIELDS = ["cookieId", "expendTime", "productId", "uid", "updateTime", "webpageId"]


def test_valid_events_match_the_seed() -> None:
    gen = ClickGenerator(seed=1)
    now = 1_700_000_000_000
    events = [orjson.loads(b) for b in gen.batch(20_000, now_ms=now)]
    for event in events:
        assert list(event) == FIELDS
        assert len(event["cookieId"]) == 15
        assert set(event["cookieId"]) <= set(string.ascii_letters)
        assert 0 <= event["expendTime"] <= 19 and isinstance(event["expendTime"], int)
        assert 10 <= event["webpageId"] <= 99
        assert event["uid"] in UIDS and isinstance(event["uid"], str)
        assert event["productId"] in {str(i) for i in range(20)}
        assert event["updateTime"] == now
    assert {e["expendTime"] for e in events} == set(range(20))
    assert {e["webpageId"] for e in events} == set(range(10, 100))
    uids = Counter(e["uid"] for e in events)
    # the seed's nextInt(1, 6) is 1..5, all keys of USERINFR_MAP: its default never occurs
    assert set(uids) == set(UIDS) == {"513248", "10952", "555655", "795098", "603670"}
    assert all(3500 < n < 4500 for n in uids.values())  # ~1/5 each
    letters = Counter("".join(e["cookieId"] for e in events))
    assert len(letters) == 52 and max(letters.values()) / min(letters.values()) < 1.2


def test_seed_makes_it_reproducible() -> None:
    assert ClickGenerator(seed=3).batch(50, 1) == ClickGenerator(seed=3).batch(50, 1)
    assert ClickGenerator(seed=3).batch(50, 1) != ClickGenerator(seed=4).batch(50, 1)


def _kind(raw: bytes) -> str:
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "truncated_json"
    for name in ("uid", "productId", "updateTime"):
        if name not in event:
            return f"missing_{name}"
    if event["expendTime"] == "abc":
        return "wrong_type_expendTime"
    if event["updateTime"] == "yesterday":
        return "wrong_type_updateTime"
    return VALID


def test_bad_ratio_is_exact_and_rotates_kinds() -> None:
    gen = ClickGenerator(bad_ratio=0.03, seed=9)
    produced = [raw for size in (7, 1000, 993, 5000) for raw in gen.batch(size)]
    assert len(produced) == 7000 and gen.total == 7000
    assert gen.malformed == 210 and gen.counts[VALID] == 6790
    seen = Counter(_kind(raw) for raw in produced)
    assert seen == gen.counts
    assert {k: gen.counts[k] for k in MALFORMED_KINDS} == {k: 35 for k in MALFORMED_KINDS}


def test_all_bad() -> None:
    gen = ClickGenerator(bad_ratio=1.0, seed=1)
    assert all(_kind(raw) != VALID for raw in gen.batch(60))
    assert gen.counts[VALID] == 0


def test_bad_ratio_range_checked() -> None:
    with pytest.raises(SourceError, match=r"1\.5"):
        ClickGenerator(bad_ratio=1.5)


def test_pacer_holds_rate() -> None:
    pacer = Pacer(2000)
    assert pacer.slice_size(5000) == 20
    sent = 0
    while sent < 600:
        sent += pacer.slice_size(5000)
        pacer.wait(sent)
    elapsed = time.monotonic() - pacer.began
    assert 0.29 <= elapsed <= 0.6  # sleeps overshoot on a busy machine, never undershoot
    assert Pacer(None).slice_size(5000) == 5000
    with pytest.raises(SourceError, match="rate 0"):
        Pacer(0)


def test_a_wide_product_space_with_a_hot_key() -> None:
    gen = ClickGenerator(seed=2, products=1_000_000, hot_share=0.3)
    ids = [e["productId"] for e in gen.events(20_000, 1)]
    hot = ids.count("0") / len(ids)
    assert 0.28 < hot < 0.32
    others = [int(i) for i in ids if i != "0"]
    assert len(set(others)) > 0.95 * len(others) and max(others) > 900_000
    assert {e["productId"] for e in ClickGenerator(seed=2).events(2_000, 1)} == set(PRODUCT_IDS)


@pytest.mark.parametrize(("products", "hot"), [(0, 0.0), (10, 1.5), (10, -0.1)])
def test_a_bad_product_space_is_refused(products: int, hot: float) -> None:
    with pytest.raises(SourceError, match="products must be >= 1"):
        ClickGenerator(products=products, hot_share=hot)
