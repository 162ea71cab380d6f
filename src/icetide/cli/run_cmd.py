"""``icetide run PIPELINE_DIR``: run a pipeline's flows."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from types import FrameType

import click

from icetide.cli.options import conf_option, config_option, context_from
from icetide.errors import listed
from icetide.flows.loop import BatchResult
from icetide.maintainer import AnyReport
from icetide.runtime.interrupt import request_stop
from icetide.runtime.startup import phase


def _written(result: BatchResult) -> str:
    """``+N rows`` for an append; what each MERGE inserted, updated and deleted."""
    if not result.changes:
        return f"+{result.rows} rows"
    if len(result.changes) == 1:
        return str(next(iter(result.changes.values())))
    return "; ".join(f"{table.split('.', 1)[-1]} {changes}"
                     for table, changes in sorted(result.changes.items()))


def _print_batch(result: BatchResult) -> None:
    fresh = ""
    if result.max_event_time_ms is not None:
        fresh = f", freshness {time.time() - result.max_event_time_ms / 1000:.1f}s"
    click.echo(
        f"{time.strftime('%H:%M:%S')} {result.flow}: {_written(result)}, "
        f"{result.dlq_rows} dead letters, {result.rows_in} read in {result.seconds:.2f}s{fresh}"
    )


def _print_maintained(report: AnyReport) -> None:
    click.echo(f"{time.strftime('%H:%M:%S')} maintained {report.summary()}")


@click.command()
@click.argument("pipeline_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--flow", "flows", multiple=True, metavar="NAME",
              help="Run only this flow (repeatable). Default: all flows.")
@click.option("--once", is_flag=True,
              help="Process everything available now, commit, and exit 0.")
@click.option("--trigger-interval", type=float, default=None, metavar="SECONDS",
              help="Seconds between micro-batches (default: pipeline defaults, then "
                   "flows.trigger_interval).")
@conf_option
@config_option
def run(pipeline_dir: Path, flows: tuple[str, ...], once: bool,
        trigger_interval: float | None, conf: dict[str, str], config_path: Path | None) -> None:
    """Run the flows of the pipeline in PIPELINE_DIR (a folder with icetide-pipeline.yml).

    Continuous by default: a micro-batch every trigger interval until Ctrl-C; each batch
    commits its rows and source positions in one Iceberg commit, so a restart (even
    after kill -9) resumes exactly where the last commit stopped.
    """
    phase("cli")  # the interpreter started and imported the command
    ctx = context_from(config_path, pipeline_dir, conf)
    if once:
        done = ctx.run(once=True, flows=flows, trigger_interval=trigger_interval,
                       on_batch=_print_batch)
        total = sum(r.rows for results in done.values() for r in results)
        click.echo(f"done: {total} rows committed by {len(done)} flow(s)")
        return
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        click.echo("stopping after the current batch…", err=True)
        stop.set()
        request_stop()  # retry waits (an unreachable broker or database) end at once

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    with ctx.pipeline_run(flows, trigger_interval) as pipeline:
        click.echo(f"running pipeline {ctx.graph.spec.name!r}: flows "
                   f"{listed(f.name for f in pipeline.flows)} (Ctrl-C to stop)")
        pipeline.run_forever(stop, on_batch=_print_batch, on_maintained=_print_maintained)
