"""Compile ``create_auto_cdc_flow`` declarations into generic flows (CDC into upsert tables)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from icetide.errors import PipelineError
from icetide.flows.loop import Flow
from icetide.pipelines.spec import FlowSpec

if TYPE_CHECKING:
    from icetide.pipelines.run import PipelineRun


def compile_auto_cdc(run: PipelineRun, spec: FlowSpec) -> Flow:
    """The generic flow of an auto-CDC declaration."""
    raise PipelineError(
        f"flow {spec.name!r}: create_auto_cdc_flow from MySQL/Debezium sources is not wired "
        "into the runner yet; load dimensions with `icetide seed dims` meanwhile"
    )
