"""``icetide run``'s batch line: appends say rows added, MERGEs what they changed."""

from __future__ import annotations

from icetide.cli.run_cmd import _written
from icetide.flows.loop import BatchResult
from icetide.lake.sinks import Changes


def _result(changes: dict[str, Changes]) -> BatchResult:
    return BatchResult("f", {}, {}, rows=120, rows_in=130, dlq_rows=0, max_event_time_ms=None,
                       seconds=1.0, caught_up=True, changes=changes)


def test_append_batch_says_rows_added() -> None:
    assert _written(_result({})) == "+120 rows"


def test_merge_batch_says_inserted_updated_deleted() -> None:
    line = _written(_result({"lake.dws.product_user": Changes(0, 7, 0)}))
    assert line == "+0 inserted, ~7 updated, -0 deleted"


def test_multi_table_cdc_batch_names_each_table() -> None:
    line = _written(_result({"lake.db.orders": Changes(1, 2, 3),
                             "lake.db.products": Changes(0, 1, 0)}))
    assert line == ("db.orders +1 inserted, ~2 updated, -3 deleted; "
                    "db.products +0 inserted, ~1 updated, -0 deleted")


def test_status_caption_names_master_and_executors() -> None:
    from icetide.app.status import TableStatus
    from icetide.cli.render import runs_on

    rows = [TableStatus(table="a.b", master="spark://127.0.0.1:7077",
                        executors=("0@127.0.0.1:1", "1@127.0.0.1:2")), TableStatus(table="c.d")]
    assert runs_on(rows) == ("runs on spark://127.0.0.1:7077 · 2 executors: "
                             "0@127.0.0.1:1, 1@127.0.0.1:2")
    assert runs_on([TableStatus(table="c.d")]) is None


def test_status_caption_names_the_catalog_address() -> None:
    from icetide.app.status import TableStatus
    from icetide.cli.render import status_table

    table = status_table([TableStatus(table="a.b", master="local[2]")],
                         catalog="thrift://127.0.0.1:41234")
    assert table.caption == "catalog thrift://127.0.0.1:41234\nruns on local[2] · 0 executors"
    assert status_table([TableStatus(table="c.d")]).caption is None
