"""What compiling a flow needs of the run: a narrow view, not the whole ``PipelineRun``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from icetide.engine.discovery import Discovery
from icetide.model.source import AnySource
from icetide.pipelines.graph import PipelineGraph
from icetide.pipelines.spec import FlowSpec, TableSpec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class CompileContext(Protocol):
    """The pipeline being compiled, its sources and the session (see ``PipelineRun``)."""

    @property
    def spark(self) -> SparkSession: ...
    @property
    def graph(self) -> PipelineGraph: ...
    @property
    def catalog(self) -> str: ...
    @property
    def sources(self) -> Mapping[str, AnySource]: ...
    @property
    def aliases(self) -> Mapping[str, str]: ...
    @property
    def max_records(self) -> int | None: ...

    def qualify(self, name: str) -> str: ...

    def discover(self, spec: FlowSpec) -> Discovery: ...

    def ensure_target(self, table: TableSpec, found: Discovery) -> str: ...
