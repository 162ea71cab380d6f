#!/usr/bin/env bash
# Run the whole test suite (unit + integration on real Spark, broker, MariaDB, PostgreSQL).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
"$VENV/bin/ruff" check --quiet src tests examples benchmarks
"$VENV/bin/mypy" --no-error-summary
# Layer rules (pyproject.toml [tool.importlinter]): no cycles, no pyspark in the core.
"$VENV/bin/lint-imports" --no-cache >/dev/null || "$VENV/bin/lint-imports" --no-cache
# --durations: the CI log names the slowest tests (the suite aims at < 30 min)
exec "$VENV/bin/python" -m pytest -p no:cacheprovider --durations=40 "$@"
