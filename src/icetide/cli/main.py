"""``icetide`` command line: thin commands over the library.

Sub-commands are imported lazily so ``icetide --help`` answers without starting a JVM
or importing pyspark.
"""

from __future__ import annotations

import importlib
import logging
import sys

import click

from icetide import __version__
from icetide.cli.exits import INTERRUPTED, REFUSED
from icetide.cli.messages import echo_error, show_click_error
from icetide.errors import IcetideError

# command name → (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "broker": ("icetide.cli.broker_cmd", "broker", "Run the embedded Kafka-compatible broker."),
    "gen": ("icetide.cli.gen_cmd", "gen", "Generate test data (the seed's click events)."),
    "demo": ("icetide.cli.demo_cmd", "demo", "Run the seed system end to end, no config needed."),
    "run": ("icetide.cli.run_cmd", "run", "Run a pipeline's flows (continuous or --once)."),
    "dry-run": ("icetide.cli.dryrun_cmd", "dry_run", "Check a pipeline without writing anything."),
    "status": ("icetide.cli.status_cmd", "status", "Freshness, commits, dead letters, lag."),
    "dashboard": ("icetide.cli.dashboard_cmd", "dashboard",
                  "Serve a live web dashboard of the pipeline (status, DAG, queries)."),
    "seed": ("icetide.cli.seed_cmd", "seed", "Load the seed's dimension rows into the lake."),
    "cdc": ("icetide.cli.cdc_cmd", "cdc", "Operate CDC flows (resnapshot after a purged binlog)."),
    "table": ("icetide.cli.table_cmd", "table",
              "One table's lifecycle: refresh, suspend, resume, set-freshness."),
    "catalog": ("icetide.cli.catalog_cmd", "catalog",
                "The catalog service: start/stop/status of the metastore, migrate."),
    "sql": ("icetide.cli.query_cmds", "sql", "Run a SQL query over the lake."),
    "tables": ("icetide.cli.query_cmds", "tables", "List the lake's tables."),
    "describe": ("icetide.cli.query_cmds", "describe",
                 "Show a table's schema, partitions, snapshots."),
    "maintain": ("icetide.cli.maintain_cmd", "maintain",
                 "One table-maintenance pass (compact, expire, orphans); --dry-run."),
    "call": ("icetide.cli.maintain_cmd", "call",
             "Run an Iceberg procedure: system.rewrite_data_files(table => ...)."),
    "jars": ("icetide.cli.jars_cmd", "jars",
             "JVM dependencies by Maven coordinates: list, resolve, copy."),
    "trino": ("icetide.cli.trino_cmd", "trino",
              "Trino over the lake: start/stop/status of a local one, its catalog file."),
    "serve": ("icetide.cli.serve_cmd", "serve",
              "Serve the lake to other tools (serve sql: HiveServer2 JDBC/ODBC)."),
}


class LazyGroup(click.Group):
    """A group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        module = importlib.import_module(spec[0])
        command: click.Command = getattr(module, spec[1])
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="icetide")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
def cli(verbose: int) -> None:
    """icetide: a near-real-time lakehouse on Spark and Iceberg.

    Configuration comes from ./icetide.yaml (or --config / $ICETIDE_CONFIG) with
    ICETIDE_<SECTION>__<KEY> environment overrides; state lives in $ICETIDE_HOME
    (default ./.icetide).
    """
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("py4j", "kafka", "pymysqlreplication"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def main(argv: list[str] | None = None) -> object:
    """Entry point: IcetideError → a one-line message and exit code 2 (cli/exits.py)."""
    try:
        return cli.main(args=argv, prog_name="icetide", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(INTERRUPTED)
    except click.ClickException as exc:
        show_click_error(exc)
        sys.exit(exc.exit_code)
    except IcetideError as exc:
        echo_error(str(exc))
        sys.exit(REFUSED)
    except KeyboardInterrupt:
        sys.exit(INTERRUPTED)
