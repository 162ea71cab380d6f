"""``icetide sql``, ``icetide tables`` and ``icetide describe``.

The integrator registers the click commands :data:`sql`, :data:`tables` and :data:`describe`
in ``cli/main.py``. Commands print; the library code they call only logs.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar, cast

import click
import duckdb
from click.core import ParameterSource
from rich.console import Console
from rich.table import Table

from icetide.app.context import Engine
from icetide.app.describe import TableDescription, readable_summary
from icetide.cli.exits import Refused
from icetide.cli.hints import duckdb_hint
from icetide.cli.messages import CliError
from icetide.cli.options import config_option, context_from
from icetide.errors import IcetideError, QueryError, TableError

F = TypeVar("F", bound=Callable[..., object])
FORMATS = click.Choice(["table", "json", "csv"])


def format_option(func: F) -> F:
    """The ``--format table|json|csv`` option."""
    return click.option(
        "--format", "fmt", type=FORMATS, default="table", show_default=True,
        help="Output format.",
    )(func)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _spark_error(exc: Exception) -> str | None:
    """The message of a Spark/py4j error, or None (pyspark is imported only if already loaded)."""
    if "pyspark" not in sys.modules:
        return None
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    if isinstance(exc, PySparkException):
        return _first_line(exc)
    if isinstance(exc, Py4JJavaError):
        return _first_line(exc.java_exception)
    return None


@contextmanager
def cli_errors(found: tuple[type[IcetideError], ...] = ()) -> Iterator[None]:
    """Turn icetide and engine errors into one-line CLI errors (no traceback) with the
    exit codes of every verb: icetide refused (bad configuration or input) → 2, the
    engine found an error in the statement → 1, and so do the ``found`` errors."""
    try:
        yield
    except found as exc:
        raise CliError(str(exc)) from exc
    except IcetideError as exc:
        raise Refused(str(exc)) from exc
    except duckdb.Error as exc:  # whole: its later lines point at the bad spot in the query
        raise CliError(f"DuckDB: {str(exc).strip()}") from exc
    except Exception as exc:
        message = _spark_error(exc)
        if message is None:
            raise
        raise CliError(f"Spark: {message}") from exc


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, default=str, sort_keys=True)
    return str(value)


def emit(
    columns: Sequence[str], rows: Sequence[Sequence[object]], fmt: str, title: str = "",
) -> None:
    """Print rows as a rich table, a JSON array of objects or CSV with a header."""
    if fmt == "json":
        records = [dict(zip(columns, row, strict=True)) for row in rows]
        click.echo(json.dumps(records, default=str, indent=2))
    elif fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([_cell(v) for v in row] for row in rows)
    else:
        table = Table(title=title or None, show_lines=False)
        for column in columns:  # a name is never cut into fragments; long values fold
            table.add_column(column, overflow="fold", no_wrap=column in ("table", "name"))
        for row in rows:
            table.add_row(*(_cell(v) for v in row))
        # without a terminal nothing wraps (pipes and files want whole lines; for data use
        # --format json|csv)
        Console(width=None if sys.stdout.isatty() else 100_000).print(table)


@click.command("sql")
@click.argument("query")
@format_option
@click.option(
    "--engine", type=click.Choice(["spark", "duckdb", "trino"]), default="spark",
    show_default=True,
    help="spark: any statement, any catalog. duckdb: fast read-only SELECT, no JVM. "
         "trino: Trino SQL on trino.uri or this lake's `icetide trino start`.",
)
@click.option(
    "--limit", type=click.IntRange(min=0), default=1000, show_default=True,
    help="Print at most this many rows (0: all).",
)
@config_option
def sql(query: str, fmt: str, engine: str, limit: int, config_path: Path | None) -> None:
    """Run QUERY (Spark SQL, DuckDB SQL with --engine duckdb, Trino SQL with --engine
    trino) and print the result.

    Tables are named namespace.table (or catalog.namespace.table).
    """
    # a table the statement names that does not exist is an error in the SQL (exit 1), as
    # Spark reports it; the DuckDB path finds it in the catalog first; Trino says it itself
    started = time.perf_counter()
    with cli_errors(found=(TableError, QueryError)):
        result = context_from(config_path).sql(query, engine=cast(Engine, engine),
                                               limit=limit or None)
    emit(result.columns, result.rows, fmt)
    if result.truncated:
        click.echo(f"(showing the first {limit} rows; use --limit 0 for all)", err=True)
    defaulted = click.get_current_context().get_parameter_source("engine")
    if fmt == "table" and defaulted == ParameterSource.DEFAULT:  # a person reads it
        hint = duckdb_hint(query, time.perf_counter() - started)
        if hint is not None:
            click.echo(hint, err=True)


@click.command("tables")
@format_option
@config_option
def tables(fmt: str, config_path: Path | None) -> None:
    """List the catalog's tables (Iceberg, and Hudi tables synced to its metastore): format,
    rows, snapshot (Hudi: commit) count and last commit time (UTC)."""
    with cli_errors():
        summaries = context_from(config_path).tables()
    columns = ["table", "format", "rows", "snapshots", "last_commit", "format_version"]
    rows = [
        (s.name, s.format, s.rows, s.snapshots, s.last_commit, s.format_version)
        for s in summaries
    ]
    emit(columns, rows, fmt)


def _summary_text(summary: Mapping[str, str]) -> str:
    return "\n".join(f"{k}={v}" for k, v in readable_summary(summary))


def _print_description(info: TableDescription) -> None:
    console = Console()
    console.print(f"[bold]{info['table']}[/bold]  {info['format']} v{info['format_version']}")
    console.print(f"location: {info['location']}", soft_wrap=True)
    console.print(f"current snapshot: {info['current_snapshot_id']}  rows: {info['rows']}")
    console.print(f"identifier fields: {', '.join(info['identifier_fields']) or '(none)'}")
    if info["format"] == "iceberg":
        distribution = info["properties"].get("write.distribution-mode", "Iceberg's default")
        console.print(f"sort order (cluster_by): {', '.join(info['sort_order']) or 'unsorted'}"
                      f"; write distribution: {distribution}", soft_wrap=True)
    schema = info["schema"]
    emit(["id", "name", "type", "nullable", "doc"],
         [(f["id"], f["name"], f["type"], "no" if f["required"] else "yes", f["doc"] or "")
          for f in schema], "table", "Schema")
    spec = info["partition_spec"]
    if spec:
        emit(["name", "transform", "source"],
             [(p["name"], p["transform"], p["source"]) for p in spec], "table", "Partition spec")
    else:
        console.print("partition spec: unpartitioned")
    emit(["property", "value"], sorted(info["properties"].items()), "table", "Properties")
    _print_history(console, info)
    snaps = info["snapshots"]
    emit(["committed_at", "snapshot_id", "operation", "summary"],
         [(s["committed_at"], s["snapshot_id"], s["operation"], _summary_text(s["summary"]))
          for s in snaps], "table", f"Last {len(snaps)} snapshots (newest first)")


def _print_history(console: Console, info: TableDescription) -> None:
    """How far back time travel reaches, and the table's tags and branches."""
    travel = info["time_travel"]
    if travel["oldest_snapshot_id"] is not None:
        console.print(f"time travel: back to {travel['oldest_committed_at']} (snapshot "
                      f"{travel['oldest_snapshot_id']}, the oldest of {travel['snapshots_kept']}"
                      " kept; VERSION AS OF / TIMESTAMP AS OF)", soft_wrap=True)
    refs = info["refs"]
    if info["format"] != "iceberg":  # a Hudi table: commits (instants), no tags
        return
    if refs:
        emit(["ref", "type", "snapshot_id", "expires"],
             [(r["name"], r["type"], r["snapshot_id"],
               "never" if r["max_ref_age_ms"] is None
               else f"{r['max_ref_age_ms'] / 86_400_000:g} days after its snapshot")
              for r in refs], "table", "Tags and branches")
    else:
        console.print("tags and branches: none (icetide call \"system.create_tag(...)\")")


@click.command("describe")
@click.argument("table")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
    help="Output format.",
)
@click.option("--snapshots", type=click.IntRange(min=0), default=5, show_default=True,
              help="How many recent snapshots to show.")
@config_option
def describe(table: str, fmt: str, snapshots: int, config_path: Path | None) -> None:
    """Show TABLE: schema with Iceberg types, partition spec, identifier fields,
    properties and the latest snapshots with their summaries (incl. icetide.* keys)."""
    with cli_errors():
        info = context_from(config_path).describe(table, snapshots)
    if fmt == "json":
        click.echo(json.dumps(info, default=str, indent=2))
    else:
        _print_description(info)
