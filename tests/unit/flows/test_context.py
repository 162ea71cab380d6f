"""Side-table bookkeeping of the batch context: when an emit's row count is known."""

from __future__ import annotations

from typing import Any

from icetide.flows.context import BatchContext


class _Frame:
    """Stands in for a DataFrame: emit only unions frames."""

    def unionByName(self, other: Any) -> _Frame:
        return self


def _ctx() -> BatchContext:
    return BatchContext(spark=None, flow="f", catalog="lake", sources={},  # type: ignore[arg-type]
                        batches={})


def test_counted_emits_add_up_from_the_observed_metrics() -> None:
    ctx = _ctx()
    ctx.emit("db.dlq", _Frame(), rows_metric="a")  # type: ignore[arg-type]
    ctx.emit("db.dlq", _Frame(), rows_metric="b")  # type: ignore[arg-type]
    assert ctx.side_rows("lake.db.dlq", {"a": 2, "b": 3}) == 5
    assert ctx.side_rows("lake.db.dlq", {"a": 2}) is None  # one count never came


def test_one_uncounted_emit_leaves_the_table_to_be_counted() -> None:
    for first, second in (("a", None), (None, "a")):
        ctx = _ctx()
        ctx.emit("db.dlq", _Frame(), rows_metric=first)  # type: ignore[arg-type]
        ctx.emit("db.dlq", _Frame(), rows_metric=second)  # type: ignore[arg-type]
        assert ctx.side_rows("lake.db.dlq", {"a": 2}) is None
        assert len(ctx.side_outputs) == 1
