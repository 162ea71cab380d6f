"""The one front object every adapter calls: CLI, web dashboard, SQL server, notebooks.

``Context(settings, pipeline_dir)`` knows the lake (catalog), optionally one pipeline,
and owns the SparkSession lazily: ``status``, ``tables``, ``describe`` and DuckDB queries
never start a JVM; ``run``, ``dry_run`` and Spark SQL start it on first use. Methods
return dataclasses; printing is the adapters' job.

    ctx = Context.load(pipeline_dir="examples/clickstream")
    ctx.run(once=True)
    rows = ctx.status()
    ctx.sql("SELECT count(*) FROM ods_behavior.clickevent", engine="duckdb")
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from icetide.config import Settings, load_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icetide.app.catalog import CatalogService
    from icetide.app.dashboard import DashboardState, DeadLetter
    from icetide.app.jars import JarListing
    from icetide.app.lag import LagProbes, SourceLag
    from icetide.app.status import TableStatus
    from icetide.cdc.reset import ResnapshotRequest
    from icetide.engine.pacing import FreshnessTarget
    from icetide.engine.run import PipelineRun
    from icetide.engine.table_refresh import RefreshRequest
    from icetide.flows.loop import BatchResult
    from icetide.lake.hudi_timeline import HudiTimeline
    from icetide.lake.table_state import TableState
    from icetide.maintainer import AnyReport
    from icetide.pipelines.dryrun import DryRunReport
    from icetide.pipelines.graph import PipelineGraph
    from icetide.query.catalog_info import TableDescription, TableSummary
    from icetide.query.result import QueryResult
    from icetide.runtime.catalog_migrate import Migrated
    from icetide.runtime.catalogs import ReadCatalog
    from icetide.serving.thrift import SqlServer

log = logging.getLogger(__name__)

Engine = Literal["spark", "duckdb", "trino"]


@dataclass
class Context:
    """The lake of ``settings`` and, when ``pipeline_dir`` is given, one pipeline."""

    settings: Settings
    pipeline_dir: Path | None = None
    #: Overrides of the pipeline's ``configuration:`` (``--conf KEY=VALUE``).
    conf: Mapping[str, str] = field(default_factory=dict)
    _spark: SparkSession | None = field(default=None, init=False, repr=False)

    @classmethod
    def load(cls, config_path: Path | str | None = None, pipeline_dir: Path | str | None = None,
             conf: Mapping[str, str] | None = None) -> Context:
        """Settings from ``config_path`` (else ./icetide.yaml / $ICETIDE_CONFIG) + env."""
        return cls(load_settings(config_path), Path(pipeline_dir) if pipeline_dir else None,
                   dict(conf or {}))

    # -- what the context holds ------------------------------------------------------
    @cached_property
    def graph(self) -> PipelineGraph:
        """The loaded pipeline (raises when the context has none)."""
        from icetide.errors import PipelineError
        from icetide.pipelines import load_pipeline

        if self.pipeline_dir is None:
            raise PipelineError("this needs a pipeline: pass its folder (PIPELINE_DIR)")
        return load_pipeline(self.pipeline_dir, configuration=self.conf)

    @cached_property
    def catalog(self) -> ReadCatalog:
        """The catalog as metadata readers see it (pyiceberg; no JVM)."""
        from icetide.runtime.catalogs import pyiceberg_catalog

        return pyiceberg_catalog(self.settings)

    @property
    def spark(self) -> SparkSession:
        """The SparkSession, started on first use."""
        if self._spark is None:
            from icetide.runtime.session import get_spark

            self._spark = get_spark(self.settings)
        return self._spark

    # -- pipelines -------------------------------------------------------------------
    def pipeline_run(self, flows: Sequence[str] = (),
                     trigger_interval: float | None = None) -> PipelineRun:
        """A run of the pipeline's flows (a context manager), for callers that drive it."""
        from icetide.engine.run import PipelineRun, select_flows
        from icetide.runtime.startup import phase

        select_flows(self.graph, flows)  # a misspelt --flow is refused before Spark starts
        phase("pipeline_loaded")
        return PipelineRun(self.spark, self.settings, self.graph, only=flows,
                           trigger_interval=trigger_interval)

    def run(self, *, once: bool = False, flows: Sequence[str] = (),
            trigger_interval: float | None = None, stop: threading.Event | None = None,
            on_batch: Callable[[BatchResult], None] | None = None,
            on_maintained: Callable[[AnyReport], None] | None = None,
            ) -> dict[str, list[BatchResult]]:
        """``once``: everything available now, then return the batches per flow.
        Else continuously until ``stop`` is set (returns nothing per flow), maintaining
        the tables it writes (``on_maintained`` after each pass)."""
        with self.pipeline_run(flows, trigger_interval) as run:
            if once:
                return run.run_once(on_batch=on_batch)
            run.run_forever(stop or threading.Event(), on_batch=on_batch,
                            on_maintained=on_maintained)
            return {}

    def dry_run(self) -> DryRunReport:
        """Check the pipeline on empty inputs, write nothing."""
        from icetide.engine.analyzer import spark_dry_run

        return spark_dry_run(self.spark, self.settings, self.graph)

    # -- the lake --------------------------------------------------------------------
    def status(self, *, lag: bool = True) -> list[TableStatus]:
        """Per table: last commit, freshness vs target, dead letters, expectations, lag.
        The pipeline's tables and the lake's tables its code reads (``dp.read``) when the
        context has one, else every table. No JVM."""
        from icetide.app.status import collect_status

        tables, targets, inputs = self._scope()
        with self._lag_probes(lag) as probes:
            rows = collect_status(self.catalog, tables, targets=targets, lag=probes,
                                  running=self._running_probe(), hudi=self.hudi_timelines())
        return [r for r in rows if r.exists or r.table not in inputs]

    def source_lags(self) -> dict[str, tuple[SourceLag, ...]]:
        """The source lag of :meth:`status`'s tables alone, by table (asks the sources:
        seconds when a broker is down). No JVM."""
        from icetide.app.status import collect_lags

        tables, _, _ = self._scope()
        with self._lag_probes(True) as probes:
            assert probes is not None
            return collect_lags(self.catalog, tables, probes, self.hudi_timelines())

    def _scope(self) -> tuple[list[str] | None, dict[str, FreshnessTarget] | None, set[str]]:
        """The tables of :meth:`status` (None: all), their targets, and which of them are
        only read by the pipeline (shown when they exist)."""
        from icetide.app.scope import read_tables
        from icetide.app.status import pipeline_scope

        if self.pipeline_dir is None:
            return None, None, set()
        declared, targets = pipeline_scope(self.graph)
        inputs = set(read_tables(self.graph)) - set(declared)
        return sorted({*declared, *inputs}), targets, inputs

    @contextmanager
    def _lag_probes(self, lag: bool) -> Iterator[LagProbes | None]:
        """Lag probes knowing the pipeline's declared sources (closed after use, by the
        probes: a source still asked past the probes' patience is closed when it answers)."""
        from icetide.app.lag import LagProbes, pipeline_sources

        if not lag:
            yield None
            return
        sources = (pipeline_sources(self.graph, self.settings)
                   if self.pipeline_dir is not None else {})
        probes = LagProbes(self.settings, self.catalog, sources)
        try:
            yield probes
        finally:
            probes.close()

    def _running_probe(self) -> Callable[[str, str], bool | None]:
        """``(db.table, flow) -> running?`` from the flows' leases (see runtime/leases.py)."""
        from icetide.runtime.leases import lease_key, leases_for

        leases = leases_for(self.settings)
        declared = self.graph.spec.catalog if self.pipeline_dir is not None else None
        catalog = declared or self.settings.catalog.name

        def running(table: str, flow: str) -> bool | None:
            try:
                return leases.held(lease_key(f"{catalog}.{table}", flow))
            except Exception as exc:  # a lease store that cannot be asked: say unknown
                log.debug("cannot tell whether flow %s runs: %s", flow, exc)
                return None

        return running

    def sql(self, query: str, *, engine: Engine = "spark", limit: int | None = None,
            timeout: float | None = None) -> QueryResult:
        """Run ``query``: Spark SQL (any statement), DuckDB (read-only, no JVM; a query
        running longer than ``timeout`` seconds is interrupted), or Trino (``trino.uri``
        or this home's ``icetide trino start``; Trino SQL, catalog ``trino.catalog``)."""
        self._check_hudi_engine(query, engine)
        if engine == "trino":
            from icetide.query.trino_sql import run_trino

            return run_trino(self.settings, query, limit)
        if engine == "duckdb":
            from icetide.query.duckdb_path import run_duckdb

            return run_duckdb(self.settings, query, limit, timeout, catalog=self.catalog)
        from icetide.query.spark_sql import run_sql
        from icetide.tables.procedures import is_call, parse_call

        if is_call(query):  # names checked before Spark sees it; catalog defaulted
            query = parse_call(query).sql(self.settings.catalog.name)
        return run_sql(self.spark, query, limit)

    def _check_hudi_engine(self, query: str, engine: Engine) -> None:
        """Refuse a query naming a Hudi table on an engine that cannot read it here: DuckDB
        and the local Trino read Iceberg only, Spark needs ``spark.hudi``."""
        if engine == "spark" and self.settings.spark.hudi:
            return
        from icetide.errors import ConfigError
        from icetide.query.hudi_info import hudi_named

        name = hudi_named(query, self.hudi_tables(), self.settings.catalog.name)
        if name is None:
            return
        if engine != "spark":
            raise ConfigError(
                f"{name} is a Hudi table and {engine} here reads Iceberg tables only "
                f"(docs/connect.md): query it on Spark, `icetide sql --engine spark "
                f"\"SELECT ... FROM spark_catalog.{name}\"` with spark.hudi: true")
        raise ConfigError(
            f"{name} is a Hudi table: set spark.hudi: true (ICETIDE_SPARK__HUDI=true) so "
            f"Spark loads Hudi, and read it as spark_catalog.{name}")

    def call(self, procedure: str, limit: int | None = None) -> QueryResult:
        """Run one of Iceberg's procedures: ``system.rewrite_data_files(table => 'db.t',
        strategy => 'sort', sort_order => 'zorder(a, b)')`` (``CALL`` and the catalog are
        optional); unknown procedures and arguments are refused with the valid names."""
        from icetide.query.spark_sql import run_sql
        from icetide.tables.procedures import parse_call

        statement = parse_call(procedure).sql(self.settings.catalog.name)  # before Spark
        return run_sql(self.spark, statement, limit)

    def maintain(self, tables: Sequence[str] = (), *, dry_run: bool = False,
                 progress: Callable[[AnyReport], None] | None = None,
                 ) -> list[AnyReport]:
        """One maintenance pass over ``tables`` (default: the pipeline's tables when the
        context has a pipeline, else every table of the catalog); ``dry_run`` changes
        nothing and says what a pass would do."""
        from icetide.maintainer import Maintainer

        policy = None
        if self.pipeline_dir is not None:  # the pipeline file's defaults.maintenance too
            from icetide.engine.maintenance_schedule import run_policy

            policy = run_policy(self.settings.maintenance, self.graph.spec.defaults)
        self._check_hudi_maintained(tables)
        maintainer = Maintainer(self.spark, self.settings, dry_run=dry_run, policy=policy,
                                elsewhere=self._lease_held)
        chosen = list(tables) or self._maintained_tables() or [
            *maintainer.tables(), *(sorted(self.hudi_tables()) if self.settings.spark.hudi else [])]
        reports = []
        for table in chosen:
            report = maintainer.run(table)
            if progress is not None:
                progress(report)
            reports.append(report)
        return reports

    def _check_hudi_maintained(self, tables: Sequence[str]) -> None:
        """Refuse to maintain a Hudi table in a session without Hudi, naming the setting."""
        if self.settings.spark.hudi:
            return
        named = set(tables) or set(self._maintained_tables())
        if self.pipeline_dir is not None:
            hudi = {n for n, t in self.graph.tables.items() if t.format == "hudi"}
        else:
            hudi = set(self.hudi_tables()) if named else set()
        found = sorted(named & hudi)
        if found:
            from icetide.errors import ConfigError

            raise ConfigError(
                f"{found[0]} is a Hudi table: its compaction, cleaning and archival run on "
                "Spark with Hudi: set spark.hudi: true (ICETIDE_SPARK__HUDI=true)")

    def _lease_held(self, ident: str, flow: str) -> bool:
        """Whether a process (this one included) runs ``flow`` writing ``ident`` now."""
        from icetide.runtime.leases import lease_key, leases_for

        return leases_for(self.settings).held(lease_key(ident, flow))

    def _maintained_tables(self) -> list[str]:
        if self.pipeline_dir is None:
            return []
        from icetide.app.status import pipeline_scope

        tables, _ = pipeline_scope(self.graph)
        return sorted(tables or ())

    def serve_sql(self, host: str | None = None, port: int | None = None) -> SqlServer:
        """Serve the lake over HiveServer2 (JDBC/ODBC, PyHive, beeline) from this context's
        SparkSession; ``host``/``port`` override ``sql_server.host``/``.port``. Binding
        beyond loopback without ``ICETIDE_SQL_SERVER__PASSWORD`` is refused before Spark
        starts. Stop the returned server (or use it as a context manager)."""
        from icetide.serving.auth import check_exposure
        from icetide.serving.thrift import start_sql_server

        check_exposure(self.settings.sql_server, host or self.settings.sql_server.host)
        return start_sql_server(self.spark, self.settings, host, port)
    def read_only_sql(self, query: str, *, limit: int, timeout: float) -> QueryResult:
        """One read-only statement (SELECT, WITH, SHOW, DESCRIBE) on DuckDB, at most
        ``limit`` rows and ``timeout`` seconds; anything else raises QueryRefusedError."""
        from icetide.query.readonly import check_read_only

        return self.sql(check_read_only(query), engine="duckdb", limit=limit, timeout=timeout)

    # -- the dashboard ---------------------------------------------------------------
    def dashboard(self, *, lag: bool = True,
                  lags: Mapping[str, Sequence[SourceLag]] | None = None) -> DashboardState:
        """The live dashboard's data: :meth:`status` rows (the same numbers), each table's
        last hour of commits, the DAG by layer, the dead-letter tables. No JVM.
        ``lags``: source lag fetched before (:meth:`source_lags`) instead of asking the
        sources now; each row is judged with it as :meth:`status` would."""
        from icetide.app.dashboard import collect_dashboard
        from icetide.app.status import with_lag

        rows = self.status(lag=lag and lags is None)
        if lags is not None:
            rows = [with_lag(r, lags.get(r.table, ())) for r in rows]
        graph = self.graph if self.pipeline_dir is not None else None
        return collect_dashboard(self.catalog, rows, graph,
                                 catalog_address=self.catalog_service().address,
                                 hudi=self.hudi_timelines())

    def dead_letters(self, table: str, limit: int = 20) -> list[DeadLetter]:
        """The newest ``limit`` rows of dead-letter table ``table`` (DuckDB, no JVM); any
        other table is refused (TableError naming the dead-letter tables)."""
        from icetide.app.dashboard import (
            check_dead_letter_table,
            dead_letters_query,
            to_dead_letters,
        )

        check_dead_letter_table(self.catalog, table)
        result = self.sql(dead_letters_query(table, limit), engine="duckdb")
        return to_dead_letters(result.rows)

    def tables(self) -> list[TableSummary]:
        """Every table, Iceberg and Hudi: rows, snapshots, last commit, format. No JVM."""
        from icetide.query.catalog_info import table_summaries
        from icetide.query.hudi_info import hudi_summary

        hudi = [hudi_summary(name, timeline) for name, timeline in self.hudi_timelines().items()]
        return sorted([*table_summaries(self.catalog), *hudi], key=lambda s: s.name)

    def hudi_tables(self) -> dict[str, str]:
        """``db.table`` → location of the catalog's Hudi tables (synced to its metastore)."""
        from icetide.query.hudi_info import hudi_tables

        return hudi_tables(self.settings)

    def hudi_timelines(self) -> dict[str, HudiTimeline]:
        """The catalog's Hudi tables by ``db.table``, as timelines (read lazily)."""
        from icetide.lake.hudi_timeline import HudiTimeline

        return {name: HudiTimeline(location, self.settings)
                for name, location in self.hudi_tables().items()}

    def describe(self, table: str, snapshots: int = 5) -> TableDescription:
        """Schema, partition spec, properties and recent snapshots (a Hudi table's
        commits) of ``table``. No JVM."""
        from icetide.lake.hudi_timeline import HudiTimeline
        from icetide.query import catalog_info
        from icetide.query.hudi_info import describe_hudi, find_hudi

        hudi = self.hudi_tables()
        name = find_hudi(hudi, table, self.settings.catalog.name)
        if name is not None:
            return describe_hudi(name, HudiTimeline(hudi[name], self.settings), snapshots)
        ident, loaded = catalog_info.load(self.catalog, table)
        return catalog_info.describe(ident, loaded, snapshots)

    def resnapshot(self, table: str) -> ResnapshotRequest:
        """Make the CDC flow of ``table`` copy its tables again on its next run."""
        from icetide.cdc.reset import request_resnapshot

        ident = table if table.count(".") >= 2 else f"{self.settings.catalog.name}.{table}"
        return request_resnapshot(self.spark, ident)

    def refresh(self, table: str, *, downstream: bool = False) -> list[RefreshRequest]:
        """Empty ``table`` and make its flows (and, with ``downstream``, every table's
        below it) rebuild it from their inputs on the next run."""
        from icetide.engine.table_refresh import request_refresh

        ident = table if table.count(".") >= 2 else f"{self.settings.catalog.name}.{table}"
        return request_refresh(self.spark, ident, downstream=downstream)

    def suspend(self, table: str, *, suspended: bool = True) -> TableState:
        """Suspend (or resume) the flows into ``table`` from their next batch on."""
        from icetide.lake.table_state import set_suspended

        return set_suspended(self.spark, self._qualified(table), suspended)

    def set_freshness(self, table: str, freshness: str | None) -> TableState:
        """Set ``table``'s freshness target while the pipeline runs (``None``: as declared)."""
        from icetide.lake.table_state import set_freshness

        return set_freshness(self.spark, self._qualified(table), freshness)

    def _qualified(self, table: str) -> str:
        return table if table.count(".") >= 2 else f"{self.settings.catalog.name}.{table}"

    # -- the catalog service -----------------------------------------------------------
    def catalog_service(self) -> CatalogService:
        """The catalog's type and URI; for icetide's own metastore, whether it runs."""
        from icetide.app.catalog import describe_service

        return describe_service(self.settings)

    def start_catalog(self) -> CatalogService:
        """Start icetide's metastore of this home (detached) unless it runs."""
        from icetide.app.catalog import start_service

        return start_service(self.settings)

    def stop_catalog(self) -> CatalogService | None:
        """Stop icetide's metastore of this home; ``None`` when it was not running."""
        from icetide.app.catalog import stop_service

        return stop_service(self.settings)

    def migrate_catalog(self, warehouse: Path | None = None, *, dry_run: bool = False,
                        progress: Callable[[Migrated], None] | None = None) -> list[Migrated]:
        """Register a Hadoop-catalog warehouse's tables into the configured catalog."""
        from icetide.app.catalog import migrate_into_catalog

        return migrate_into_catalog(self.settings, warehouse, dry_run=dry_run,
                                    progress=progress)

    # -- JVM dependencies ----------------------------------------------------------------
    def jars(self, *, resolve: bool = False, force: bool = False) -> JarListing:
        """The pinned JVM dependencies and their files; ``resolve`` fetches what is missing
        (``force``: everything again) from ``jars.repository`` into the cache."""
        from icetide.app.jars import list_jars, resolve_jars

        if resolve or force:
            return resolve_jars(self.settings, force=force)
        return list_jars(self.settings)

    def copy_jars(self, dest: Path) -> JarListing:
        """Copy every resolved jar to ``dest`` for ``jars.dir`` (air-gapped, clusters)."""
        from icetide.app.jars import copy_to

        return copy_to(self.settings, dest)
