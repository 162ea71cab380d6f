"""``icetide dry-run PIPELINE_DIR``: check a pipeline, write nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from icetide.cli.options import conf_option, config_option, context_from
from icetide.pipelines.dryrun import DryRunReport


def _as_json(report: DryRunReport) -> str:
    return json.dumps({
        "pipeline": report.graph.spec.name,
        "ok": report.ok,
        "order": list(report.order) if report.order is not None else None,
        "problems": [{"severity": p.severity, "code": p.code, "subject": p.subject,
                      "message": p.message} for p in report.problems],
        "schemas": {flow: dict(schema) for flow, schema in report.schemas.items()},
    }, indent=2)


@click.command("dry-run")
@click.argument("pipeline_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Report format.")
@conf_option
@config_option
def dry_run(pipeline_dir: Path, fmt: str, conf: dict[str, str], config_path: Path | None) -> None:
    """Check the pipeline in PIPELINE_DIR without writing anything.

    Runs every query flow on empty inputs (no broker or database round trip) and reports
    missing references, dependency cycles and schema mismatches (between flows, against
    a declared schema, or against an existing target table). A table that an upstream
    flow of the pipeline would create is not a problem; one that is neither in the
    pipeline nor in the catalog is. Exit code 1 when there is an error.
    """
    report = context_from(config_path, pipeline_dir, conf).dry_run()
    click.echo(_as_json(report) if fmt == "json" else report.format())
    if not report.ok:
        sys.exit(1)
