"""Compiling declared flows into generic flows, one module per kind."""

from __future__ import annotations

from icetide.engine.compile.append import compile_append
from icetide.engine.compile.cdc import compile_auto_cdc
from icetide.engine.compile.context import CompileContext
from icetide.engine.compile.refresh import compile_materialized_view
from icetide.flows.loop import Flow
from icetide.pipelines.spec import FlowSpec

__all__ = ["CompileContext", "compile_flow"]


def compile_flow(ctx: CompileContext, spec: FlowSpec) -> tuple[Flow, tuple[str, ...]]:
    """The generic flow of ``spec`` and the lake tables it reads (``db.table``)."""
    if spec.kind == "auto_cdc":
        return compile_auto_cdc(ctx, spec), spec.static_inputs
    if spec.kind == "batch":  # a materialized view: refreshed when its inputs change
        return compile_materialized_view(ctx, spec)
    return compile_append(ctx, spec)
