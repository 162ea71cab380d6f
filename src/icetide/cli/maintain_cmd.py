"""``icetide maintain`` (one maintenance pass) and ``icetide call`` (an Iceberg procedure)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from icetide.cli.options import config_option, context_from
from icetide.cli.query_cmds import cli_errors, emit
from icetide.maintainer import HudiMaintenanceReport, MaintenanceReport
from icetide.tables.procedures import procedures_help


def _size(value: int | None) -> str:
    if value is None:
        return ""
    return f"{value / 1_048_576:.1f} MB" if value >= 1_048_576 else f"{value / 1024:.0f} KB"


def _change(before: int, after: int | None, dry_run: bool) -> str:
    return str(before) if dry_run or after is None else f"{before} → {after}"


def _row(r: MaintenanceReport) -> tuple[object, ...]:
    after, done = r.after, r.actions
    deletes = done.deletes.done if done.deletes is not None else None
    return (
        r.table, ", ".join(done.done()) or "-",
        _change(r.before.data_files, after.data_files if after else None, r.dry_run),
        _change(r.before.delete_files, after.delete_files if after else None, r.dry_run),
        deletes.rewritten_delete_files_count if deletes is not None else "",
        done.expiry.snapshots if done.expiry is not None else 0,
        done.orphans.orphan_files if done.orphans is not None else 0,
        "" if r.dry_run else _size(r.bytes_freed),
        "; ".join(f"{k}: {v}" for k, v in r.skipped.items()),
    )


def _hudi_row(r: HudiMaintenanceReport) -> tuple[object, ...]:
    after, done = r.after, r.actions
    kept = {**(done.clean.kept_for_consumers if done.clean is not None else {}),
            **(done.archive.kept_for_flows if done.archive is not None else {})}
    return (
        r.table, ", ".join(done.done()) or "-",
        _change(r.before.pending_log_files, after.pending_log_files if after else None,
                r.dry_run),
        done.clean.files if done.clean is not None else 0,
        done.archive.commits if done.archive is not None else 0,
        _change(r.before.commits, after.commits if after else None, r.dry_run),
        "; ".join(f"{instant}: {who}" for instant, who in sorted(kept.items())),
        "" if r.dry_run else _size(r.bytes_freed),
        "; ".join(f"{k}: {v}" for k, v in r.skipped.items()),
    )


@click.command("maintain")
@click.argument("tables", nargs=-1)
@click.option("--pipeline", "pipeline_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Maintain this pipeline's tables (default: every table).")
@click.option("--dry-run", is_flag=True, help="Say what a pass would do; change nothing.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format.")
@config_option
def maintain(tables: tuple[str, ...], pipeline_dir: Path | None, dry_run: bool, fmt: str,
             config_path: Path | None) -> None:
    """One maintenance pass over TABLES (db.table; default: all): compaction, deletes
    applied, manifests, snapshot expiry that keeps what every consumer still needs,
    orphan files past their safety age, the metadata cap (maintenance.* settings). A Hudi
    table (spark.hudi): compaction of its log files, cleaning and archival that keep every
    commit a flow still reads."""
    with cli_errors():
        reports = context_from(config_path, pipeline_dir).maintain(tables, dry_run=dry_run)
    if fmt == "json":
        click.echo(json.dumps([r.to_dict() for r in reports], default=str, indent=2))
        return
    title = "maintenance (dry run)" if dry_run else "maintenance"
    iceberg = [r for r in reports if isinstance(r, MaintenanceReport)]
    hudi = [r for r in reports if isinstance(r, HudiMaintenanceReport)]
    if iceberg or not hudi:
        columns = ["table", "would do" if dry_run else "done", "data files", "delete files",
                   "deletes rewritten", "snapshots expired", "orphans", "freed", "yielded"]
        emit(columns, [_row(r) for r in iceberg], "table", title=title)
    if hudi:
        columns = ["table", "would do" if dry_run else "done", "log files to compact",
                   "files cleaned", "commits archived", "active commits", "kept for flows",
                   "freed", "yielded"]
        emit(columns, [_hudi_row(r) for r in hudi], "table", title=f"hudi {title}")


@click.command("call", epilog="\b\n" + procedures_help())
@click.argument("procedure")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
              show_default=True, help="Output format.")
@config_option
def call(procedure: str, fmt: str, config_path: Path | None) -> None:
    """Run one of Iceberg's procedures with named arguments, e.g.

    icetide call "system.rewrite_data_files(table => 'ods_behavior.clickevent',
    strategy => 'sort', sort_order => 'zorder(productId, uid)')"

    History: system.create_tag(table => 'db.t', tag => 'v1') keeps the current snapshot
    under a name (snapshot expiry keeps it; query it with VERSION AS OF 'v1'),
    system.rollback_to_snapshot(table => 'db.t', snapshot_id => N) makes an older one
    current (docs/connect.md, "Time travel").
    """
    with cli_errors():
        result = context_from(config_path).call(procedure)
    emit(result.columns, result.rows, fmt)
