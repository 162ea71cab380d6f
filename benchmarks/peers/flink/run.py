"""One run of the peer benchmark: the chosen hops in order, each a section of the report.

The ODS and GROUP BY hops share the clicks: one topic, the warm-up and the backlog, and
the peer's ODS job (the GROUP BY job reads its table, as the seed's does). The CDC hop
needs no clicks; it runs last, on the business database alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.peers.flink import cdc, groupby
from benchmarks.peers.flink.cdc_load import fill_members, patient_server, server_pid
from benchmarks.peers.flink.engine import PeerJars, start_job, start_spec
from benchmarks.peers.flink.measure import (
    TOPIC,
    Engines,
    Freshness,
    flink_backlog,
    freshness,
    icetide_backlog,
    icetide_flow,
    row_check,
)
from benchmarks.peers.flink.ours import MEMBERS, STATS_FLOW, cdc_pipeline, groupby_pipeline
from benchmarks.peers.flink.report import (
    BAD_RATIO,
    CDC_TITLE,
    GROUPBY_TITLE,
    TITLE,
    WARMUP,
    cdc_body,
    groupby_body,
    ods_body,
)
from benchmarks.peers.flink.sql import JobOptions
from benchmarks.peers.flink.sql_hops import (
    MEMBERS_DATABASE,
    MEMBERS_TABLE,
    STATS_DATABASE,
    STATS_TABLE,
    CdcOptions,
    HopOptions,
    cdc_spec,
    groupby_spec,
)
from icetide.config import CatalogConfig, KafkaConfig, MetastoreConfig, Settings, SparkConfig
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.flows.loop import FlowLoop

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

HOPS = ("ods", "groupby", "cdc")
#: called with each hop's title and report as soon as the hop is done
Report = Callable[[str, str], None]


def hops(text: str) -> list[str]:
    """``--hops``: names from :data:`HOPS`, comma-separated, run in the pipeline's order."""
    wanted = {h.strip() for h in text.split(",") if h.strip()}
    if not wanted or wanted - set(HOPS):
        raise SystemExit(f"--hops {text!r}: write some of {','.join(HOPS)}, comma-separated")
    return [h for h in HOPS if h in wanted]


def rates(text: str, option: str = "--rates") -> list[float]:
    try:
        found = [float(r) for r in text.split(",") if r.strip()]
    except ValueError:
        found = []
    if not found or any(r <= 0 for r in found):
        raise SystemExit(f"{option} {text!r}: write rates > 0, comma-separated, e.g. 2000,20000")
    return found


def _settings(a: argparse.Namespace, tmp: Path, bootstrap: str) -> Settings:
    import os

    from icetide.devkit.embedded.process import free_port

    settings = Settings(home=tmp / "home", spark=SparkConfig(driver_memory="4g"),
                        catalog=CatalogConfig(), metastore=MetastoreConfig(port=free_port()),
                        kafka=KafkaConfig(bootstrap=bootstrap,
                                          max_records_per_trigger=a.max_records))
    os.environ["ICETIDE_METASTORE__PORT"] = str(settings.metastore.port)
    return settings


def run_hops(a: argparse.Namespace, python: Path, tmp: Path, report: Report) -> None:
    """Every chosen hop, on one broker, one lake, one business database; each reported
    when it is done (a later hop's failure keeps the earlier ones' figures)."""
    from icetide.devkit.embedded.kinds import embedded_broker
    from icetide.runtime.metastore.service import stop_metastore
    from icetide.runtime.session import get_spark

    chosen = hops(a.hops)
    with embedded_broker(a.broker, tmp / "broker") as broker:
        settings = _settings(a, tmp, broker.bootstrap)
        from benchmarks.peers.flink.engine import peer_jars

        jars = peer_jars(settings)
        if "ods" in chosen or "groupby" in chosen:
            _click_hops(a, chosen, python, tmp, settings, jars, broker.pid, report)
        if "cdc" in chosen:
            report(CDC_TITLE, _cdc_hop(a, python, tmp, settings, get_spark(settings), jars))
        stop_metastore(settings)


def _click_hops(a: argparse.Namespace, chosen: list[str], python: Path, tmp: Path,
                settings: Settings, jars: PeerJars, broker_pid: int | None,
                report: Report) -> None:
    """The ODS hop (measured when chosen, else only run) and the GROUP BY hop on it."""
    from icetide.devkit.demo.shop import shop_database
    from icetide.runtime.catalogs import pyiceberg_catalog

    bs = settings.kafka.bootstrap
    assert bs is not None
    valid = produce_clicks(bs, TOPIC, GenOptions(count=WARMUP, partitions=a.partitions,
                                                 bad_ratio=BAD_RATIO, seed=1)).valid
    spark, flow = icetide_flow(settings)
    FlowLoop(spark, flow).run_until_caught_up()
    valid += produce_clicks(bs, TOPIC, GenOptions(
        count=a.events, partitions=a.partitions, bad_ratio=BAD_RATIO, seed=2)).valid
    ours = icetide_backlog(spark, flow)
    with shop_database(settings, None) as shop:
        info = shop.info
        job = start_job(python, JobOptions(
            bs, TOPIC, str(tmp / "flink" / "warehouse"),
            f"jdbc:mysql://{info.host}:{info.port}/{shop.database}", info.app_user,
            info.app_password, a.checkpoint, a.parallelism), jars, tmp / "flink")
        try:
            theirs = flink_backlog(job, valid, a.timeout)
            e = Engines(spark, flow, job, pyiceberg_catalog(settings), bs, broker_pid)
            if "ods" in chosen:
                windows: list[Freshness] = []
                for i, rate in enumerate(rates(a.rates)):
                    windows.append(freshness(e, rate, a.seconds, a.trigger, 3 + i, valid))
                    valid += windows[-1].produced
                check = row_check(e, valid, a.timeout)
                report(TITLE, ods_body(a, ours, theirs, windows, check))
            if "groupby" in chosen:
                report(GROUPBY_TITLE, _groupby_hop(a, python, tmp, settings, e, jars, valid))
        finally:
            job.stop()


def _groupby_hop(a: argparse.Namespace, python: Path, tmp: Path, settings: Settings,
                 e: Engines, jars: PeerJars, rows: int) -> str:
    """The statistic over the ODS tables holding ``rows`` clicks each, both engines."""
    from icetide.engine.run import PipelineRun
    from icetide.pipelines import load_pipeline

    e.flink.wait_rows(rows, a.timeout)  # the peer's ODS holds every click, as icetide's
    folder = groupby_pipeline(tmp / "pipeline-groupby", a.trigger)
    with PipelineRun(e.spark, settings, load_pipeline(folder),
                     only=["clickevent", STATS_FLOW]) as run:
        spec = next(f for f in run.flows if f.name == STATS_FLOW)
        ours = groupby.icetide_backlog(e.spark, run.compile(spec), rows)
        options = HopOptions(str(tmp / "flink" / "warehouse"), a.checkpoint, a.parallelism)
        job = start_spec(python, groupby_spec(options, jars.connectors), jars, tmp / "flink",
                         (STATS_DATABASE, STATS_TABLE))
        try:
            progress = groupby.ViewsProgress(job)
            theirs = groupby.flink_backlog(progress, rows, a.timeout)
            se = groupby.StatsEngines(e.spark, run, e.flink, job, progress, e.catalog,
                                      e.bootstrap, e.broker_pid)
            windows: list[Freshness] = []
            for i, rate in enumerate(rates(a.rates)):
                windows.append(groupby.freshness(se, rate, a.seconds, 13 + i, rows))
                rows += windows[-1].produced
            check = groupby.row_check(se, rows, a.timeout)
        finally:
            job.stop()
    return groupby_body(a, ours, theirs, windows, check)


def _cdc_hop(a: argparse.Namespace, python: Path, tmp: Path, settings: Settings,
             spark: SparkSession, jars: PeerJars) -> str:
    """``user_member`` by CDC, both engines, on a business database of ``--members``."""
    from icetide.devkit.demo.shop import shop_database
    from icetide.engine.run import PipelineRun
    from icetide.pipelines import load_pipeline
    from icetide.runtime.catalogs import pyiceberg_catalog

    spark.sql(f"DROP TABLE IF EXISTS lake.{MEMBERS} PURGE")  # the seed rows, not CDC's
    with shop_database(settings, None) as shop:
        with shop.connect() as conn:
            patient_server(conn)
            members = fill_members(conn, a.members)
            db_pid = server_pid(conn)
        folder = cdc_pipeline(tmp / "pipeline-cdc", a.cdc_checkpoint, shop)
        with PipelineRun(spark, settings, load_pipeline(folder), only=[MEMBERS],
                         trigger_interval=a.cdc_checkpoint) as run:
            flow = run.compile(run.flows[0])
            snap_ours = cdc.icetide_catch_up(spark, flow, members)
            info = shop.info
            job = start_spec(python, cdc_spec(
                HopOptions(str(tmp / "flink" / "warehouse"), a.cdc_checkpoint, a.parallelism),
                CdcOptions(info.host, info.port, info.cdc_user, info.cdc_password),
                jars.connectors + jars.cdc), jars, tmp / "flink", (MEMBERS_DATABASE, MEMBERS_TABLE))
            try:
                snapshot = (snap_ours, flink_backlog(job, members, a.timeout))
                e = cdc.CdcEngines(spark, run, flow, job, pyiceberg_catalog(settings), shop,
                                   db_pid, a.members)
                binlog = cdc.binlog_backlog(e, a.changes, a.timeout)
                windows = [cdc.freshness(e, rate, a.seconds, 23 + i)
                           for i, rate in enumerate(rates(a.cdc_rates, "--cdc-rates"))]
                check = cdc.row_check(e, a.timeout)
            finally:
                job.stop()
    return cdc_body(a, snapshot, binlog, windows, check)
