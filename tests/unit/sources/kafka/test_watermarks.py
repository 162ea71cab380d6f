"""sources/kafka/watermarks.known: librdkafka's placeholders are never taken for watermarks."""

from __future__ import annotations

import pytest

from icetide.sources.kafka.watermarks import known


@pytest.mark.parametrize(("low", "high", "real"), [
    (0, 0, True), (0, 250, True), (17, 17, True),
    (-1001, -1001, False), (0, -1001, False),  # not known yet
    (-1, -1, False), (0, -1, False), (-1, 5, False),  # cached before the first fetch reply
])
def test_known(low: int, high: int, real: bool) -> None:
    assert known(low, high) is real
