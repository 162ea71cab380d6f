"""Source lag is fetched apart: the page's data never waits for it."""

from __future__ import annotations

import threading
import time

from icetide.app.lag import SourceLag
from icetide.web.feeds import LagFeed, Lags


def _wait_for(feed: LagFeed, state: str) -> dict[str, object]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        _, info = feed.latest()
        if info["state"] == state and (state != "pending" or info["error"]):
            return info
        time.sleep(0.01)
    raise AssertionError(f"lag never {state}: {feed.latest()}")


def test_lag_is_pending_until_a_slow_fetch_answers_and_latest_never_waits() -> None:
    release = threading.Event()
    answer: Lags = {"ods.clicks": (SourceLag("kafka:clicks", 7.0, "messages"),)}

    def slow() -> Lags:
        release.wait(5)
        return answer

    feed = LagFeed(slow, refresh=60)
    feed.poke()
    feed.poke()  # one fetch at a time
    started = time.monotonic()
    assert feed.latest() == (None, {"state": "pending", "fetched_ms": None, "error": None})
    assert time.monotonic() - started < 0.5
    release.set()
    _wait_for(feed, "ready")
    assert feed.latest()[0] == answer


def test_a_failed_fetch_is_reported_and_the_page_keeps_going() -> None:
    def broken() -> Lags:
        raise OSError("catalog unreachable")

    feed = LagFeed(broken, refresh=0)
    feed.poke()
    info = _wait_for(feed, "pending")
    assert info["error"] == "OSError: catalog unreachable"
