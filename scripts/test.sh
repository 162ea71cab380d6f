#!/usr/bin/env bash
# Run the whole test suite (unit + integration on real Spark, broker, MariaDB, PostgreSQL).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
"$VENV/bin/ruff" check --quiet src tests examples benchmarks
"$VENV/bin/mypy" --no-error-summary
# Layer rules (pyproject.toml [tool.importlinter]): no cycles, no pyspark in the core.
"$VENV/bin/lint-imports" --no-cache >/dev/null || "$VENV/bin/lint-imports" --no-cache
# A worker per core, at most 4 (TEST_WORKERS=N to choose; 1: in this process): most
# tests wait on a JVM, a broker or a database, and a 2-core machine runs two of them at
# once. A module's tests stay on one worker (tests/conftest.py); modules go out in their
# order, the long end-to-end ones (tests/e2e) first, so none of them is left to run alone
# at the end.
CORES=$(nproc)
WORKERS=${TEST_WORKERS:-$(( CORES < 4 ? CORES : 4 ))}
PARALLEL=()
[ "$WORKERS" -gt 1 ] && PARALLEL=(-n "$WORKERS" --dist loadfile --no-loadscope-reorder)
# --durations: the CI log names the slowest tests (CI aims at < 40 min in all)
exec "$VENV/bin/python" -m pytest -p no:cacheprovider --durations=40 "${PARALLEL[@]}" "$@"
