"""Apply a table's expectations to each batch, in one aggregation pass.

``expect`` keeps violating rows and counts them, ``expect_or_drop`` filters them out
(counted), ``expect_or_fail`` raises :class:`~icetide.errors.ExpectationFailed` naming the
expectation, the table and a sample row, so nothing of the batch is committed.

A row violates an expectation when its condition is false *or NULL* (``price > 0`` on a
NULL price is a violation). The counts go into the commit's snapshot summary as marker
extra keys::

    icetide.expect.<name>.passed    rows satisfying the condition
    icetide.expect.<name>.failed    rows violating it (dropped ones included)
    icetide.expect.<name>.action    warn | drop | fail
    icetide.expect.dropped          rows removed by drop expectations (total)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from icetide.errors import ExpectationFailed, PipelineError
from icetide.flows.loop import CheckedBatch
from icetide.model.keys import MarkerExtra
from icetide.pipelines.spec import Expectation

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

log = logging.getLogger(__name__)



def expectation_keys(name: str) -> tuple[str, str, str]:
    """The marker extra keys (passed, failed, action) of expectation ``name``."""
    base = f"{MarkerExtra.EXPECT_PREFIX}{name}."
    return base + "passed", base + "failed", base + "action"


def expectation_counts(extra: Mapping[str, str]) -> dict[str, dict[str, object]]:
    """``{name: {"passed": n, "failed": n, "action": a}}`` from a marker's extra keys."""
    out: dict[str, dict[str, object]] = {}
    for key, value in extra.items():
        if not key.startswith(MarkerExtra.EXPECT_PREFIX) or key == MarkerExtra.EXPECT_DROPPED:
            continue
        name, _, field = key[len(MarkerExtra.EXPECT_PREFIX):].rpartition(".")
        if not name or field not in ("passed", "failed", "action"):
            continue
        out.setdefault(name, {})[field] = value if field == "action" else int(value)
    return out


class ExpectationChecker:
    """The flow loop's :data:`~icetide.flows.loop.Checker` for one table's expectations."""

    def __init__(self, table: str, expectations: Sequence[Expectation]) -> None:
        if not expectations:
            raise PipelineError(f"table {table}: an ExpectationChecker needs expectations")
        self.table = table
        self.expectations = tuple(expectations)
        self._validated = False

    def __call__(self, out: DataFrame, event_time_column: str | None) -> CheckedBatch:
        from pyspark.sql import functions as F

        if not self._validated:
            self._validate(out)
        violated = {e.name: ~F.coalesce(F.expr(e.condition_sql), F.lit(False))
                    for e in self.expectations}
        kept = F.lit(True)
        for e in self.expectations:
            if e.action == "drop":
                kept = kept & ~violated[e.name]
        row = out.agg(*self._aggregates(violated, kept, event_time_column)).collect()[0]
        total = int(row["n"])
        failed = {e.name: int(row[f"f{i}"] or 0) for i, e in enumerate(self.expectations)}
        self._raise_on_fail(out, failed, violated)
        rows = int(row["kept"] or 0)
        newest = row["newest"]
        extra = self._summary(total, failed, total - rows)
        if total - rows:
            log.info("table %s: expectations dropped %d of %d rows", self.table,
                     total - rows, total)
        return CheckedBatch(
            out=out if rows == total else out.filter(kept), rows=rows,
            max_event_time_ms=int(newest.timestamp() * 1000) if newest is not None else None,
            extra=extra)

    def _aggregates(self, violated: Mapping[str, Column], kept: Column,
                    event_time_column: str | None) -> list[Column]:
        from pyspark.sql import functions as F

        aggs = [F.count(F.lit(1)).alias("n"),
                F.sum(F.when(kept, 1).otherwise(0)).alias("kept")]
        aggs += [F.sum(F.when(violated[e.name], 1).otherwise(0)).alias(f"f{i}")
                 for i, e in enumerate(self.expectations)]
        if event_time_column is None:
            aggs.append(F.lit(None).cast("timestamp").alias("newest"))
        else:
            aggs.append(F.max(F.when(kept, F.col(event_time_column))).alias("newest"))
        return aggs

    def _validate(self, out: DataFrame) -> None:
        """Resolve every condition against the batch's columns (analysis only, no job)."""
        from pyspark.sql import functions as F

        for e in self.expectations:
            try:
                out.select(F.expr(e.condition_sql).cast("boolean"))
            except Exception as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise PipelineError(
                    f"table {self.table}: expectation {e.name!r} condition "
                    f"{e.condition_sql!r} is not a valid SQL boolean over the columns "
                    f"{out.columns}: {first}; fix the condition"
                ) from exc
        self._validated = True

    def _raise_on_fail(self, out: DataFrame, failed: Mapping[str, int],
                       violated: Mapping[str, Column]) -> None:
        for e in self.expectations:
            if e.action != "fail" or not failed[e.name]:
                continue
            sample = out.filter(violated[e.name]).limit(1).collect()
            shown = sample[0].asDict() if sample else {}
            raise ExpectationFailed(
                f"expectation {e.name!r} ({e.condition_sql}) failed on table {self.table}: "
                f"{failed[e.name]} row(s) violate it, e.g. {shown}; nothing of this batch "
                "was committed: fix the data upstream, or use expect_or_drop / expect to "
                "drop or keep such rows"
            )

    def _summary(self, total: int, failed: Mapping[str, int], dropped: int) -> dict[str, str]:
        extra = {MarkerExtra.EXPECT_DROPPED: str(dropped)}
        for e in self.expectations:
            passed_key, failed_key, action_key = expectation_keys(e.name)
            extra[passed_key] = str(total - failed[e.name])
            extra[failed_key] = str(failed[e.name])
            extra[action_key] = e.action
        return extra


def checker_for(table: str, expectations: Sequence[Expectation]) -> ExpectationChecker | None:
    """A checker for ``table``'s expectations, or ``None`` when it declares none."""
    return ExpectationChecker(table, expectations) if expectations else None
