"""Shared pytest fixtures. Keep each section small; add new sections below the existing ones."""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from icetide.config import CatalogConfig, MetastoreConfig, Settings, SparkConfig
from icetide.devkit.embedded.postgres import EmbeddedPostgres
from icetide.devkit.embedded.process import free_port
from icetide.runtime.classpath import group_jars
from icetide.runtime.session import get_spark, stop_spark
from tests.metastores import stop_metastores_under


def _below_ephemeral_port() -> int:
    """A free loopback port below the kernel's ephemeral range. A metastore port is used
    by test after test for the whole session and is free in between; in the ephemeral
    range any connection's local port could take it meanwhile (the suite once failed with
    "127.0.0.1:PORT is taken by another program")."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(100):
        port = random.randrange(max(1024, low - 10_000), low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return free_port()


# The port of every metastore service the tests start (see the metastore section below):
# one per test process (each xdist worker its own, not the one it inherits from the
# controller, or two workers' homes would meet on it).
if os.environ.get("PYTEST_XDIST_WORKER") or "ICETIDE_METASTORE__PORT" not in os.environ:
    os.environ["ICETIDE_METASTORE__PORT"] = str(_below_ephemeral_port())

#: Every Spark driver the tests start (the session below and each ``icetide`` subprocess:
#: spark-submit adds SPARK_SUBMIT_OPTS to the driver JVM's options, and subprocesses
#: inherit it) compiles with C1 only, unless SPARK_SUBMIT_OPTS is already set. The
#: suite's JVMs live for seconds to a few minutes on small batches, and the JIT's
#: compilations are the largest part of such a JVM's CPU:
#: with C1 only, tests/integration/cdc on two workers took 0.62x the CPU and 0.66x the
#: time (docs/stack.md, "The suite's JVMs").
#: A pipeline that runs for hours keeps the JVM's default (C2 made it faster:
#: docs/benchmarks-history.md); nothing a test asserts depends on the compiler.
TEST_DRIVER_JVM = "-XX:TieredStopAtLevel=1"
os.environ.setdefault("SPARK_SUBMIT_OPTS", TEST_DRIVER_JVM)


# --- tests: whole modules per xdist worker (owner: tests) ------------------------------------
# scripts/test.sh runs the suite on a worker per core (at most 4; pytest-xdist, --dist
# loadfile). A module's tests stay together on one worker, so its module fixtures start
# once; modules that share a costly session fixture run on one worker too (SHARED_WORKER).
# Not xdist_group marks: pytest 9.2 drops the node-id suffix they rely on (pytest-xdist
# issue 1386), and --dist loadgroup then spreads a group silently.

#: Modules that must share a worker, by name of what they share.
SHARED_WORKER = {"tests/e2e/test_demo.py": "demo_lake",  # tests/e2e/conftest.py
                 "tests/e2e/test_trino.py": "demo_lake"}


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return SHARED_WORKER.get(module, module)

    return ByModule(config, log)  # type: ignore[arg-type]


# --- runtime: Settings + the one session-scoped SparkSession (owner: runtime) ---------------
# `icetide_settings`: the embedded default (hadoop catalog "lake") under a tmp ICETIDE_HOME.
# `spark`: a real local Spark with Iceberg for that settings object (starting one takes 3-6 s;
# there is one per test session). The PostgreSQL JDBC driver is on its class path, so tests
# may add a jdbc catalog at runtime with spark.conf.set("spark.sql.catalog.<other>...", ...).


@pytest.fixture(scope="session")
def icetide_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("icetide-home")
    return Settings(
        home=home,
        spark=SparkConfig(master="local[2]", driver_memory="1g", shuffle_partitions=2),
        catalog=CatalogConfig(name="lake", type="hadoop"),
        metastore=MetastoreConfig(port=int(os.environ["ICETIDE_METASTORE__PORT"])),
    )


@pytest.fixture(scope="session")
def spark(icetide_settings: Settings) -> Iterator[SparkSession]:
    session = get_spark(icetide_settings, extra_jars=group_jars(icetide_settings, ["postgres"]))
    yield session
    stop_spark()


# --- runtime: a private PostgreSQL server (owner: runtime) ----------------------------------
# Debian postgresql; runs as the `postgres` OS user when the tests run as root; fsync off.


@pytest.fixture(scope="session")
def postgres() -> Iterator[EmbeddedPostgres]:
    with EmbeddedPostgres(durable=False) as server:
        yield server


# --- runtime: icetide's metastore service (owner: runtime) -----------------------------------
# The default catalog is a metastore per ICETIDE_HOME (runtime/metastore), started detached on
# first use. Tests give it one free port of their own (ICETIDE_METASTORE__PORT, inherited by
# every icetide subprocess) and stop the services a test started once it ends (but those of
# session fixtures: tests.metastores.KEEP), so two homes never meet on a port and nothing
# outlives the session.


@pytest.fixture(autouse=True)
def _stop_metastores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    stop_metastores_under(tmp_path_factory.getbasetemp())


# --- end runtime ------------------------------------------------------------------------------


# --- mariadb: a private MariaDB server with binlog CDC settings (owner: sources/mysql) -------
# `mariadb`: connection info (MariaDBInfo) of one server per test session, on loopback with a
# free port and a private data dir; users icetide_cdc (CDC grants) and icetide_app (all).
# Tests create their own databases; tests that purge binlogs start their own server.

from icetide.devkit.embedded.mariadb import EmbeddedMariaDB, MariaDBInfo  # noqa: E402


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDBInfo]:
    with EmbeddedMariaDB(tmp_path_factory.mktemp("mariadb")) as info:
        yield info


# --- end mariadb ------------------------------------------------------------------------------


# --- broker: the embedded Kafka-protocol broker (owner: sources/kafka) ----------------------
# `broker`: the bootstrap string ("127.0.0.1:<free port>") of one broker per test session and
# kind: Tansu (in-memory: data lives as long as the session) by default; a test module or
# test marked `@tests.brokers.BOTH` runs once on Tansu and once on Apache Kafka (KRaft, its
# own log dirs), `@tests.brokers.APACHE` on Apache Kafka only. `kafka_topic(partitions=3)`
# creates a fresh, uniquely named topic on it and returns the name; `create_topic(bootstrap,
# name, partitions)` does the same for any broker. Tests that stop or restart a broker start
# their own (`icetide.devkit.embedded.kinds.embedded_broker(kind, dir)`). `apache_kafka` is
# the session's EmbeddedKafka (its SASL/SCRAM listener: `.sasl_bootstrap`, user
# tests.brokers.SCRAM).

import uuid  # noqa: E402
from collections.abc import Callable  # noqa: E402

from icetide.devkit.embedded.broker import EmbeddedBroker  # noqa: E402
from icetide.devkit.embedded.kafka import EmbeddedKafka  # noqa: E402
from icetide.devkit.embedded.kinds import KINDS  # noqa: E402
from tests.brokers import SCRAM  # noqa: E402


def create_topic(bootstrap: str, name: str | None = None, partitions: int = 3) -> str:
    """Create topic ``name`` (default: a unique ``t_<hex>``) and return its name."""
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    topic = name or f"t_{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)
    return topic


@pytest.fixture(scope="session")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker(None, tmp_path_factory.mktemp("tansu")) as embedded:
        yield embedded


@pytest.fixture(scope="session")
def apache_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedKafka]:
    """Apache Kafka with a PLAINTEXT listener and a SASL/SCRAM one (user ``SCRAM.name``)."""
    with EmbeddedKafka(None, tmp_path_factory.mktemp("kafka"), scram=SCRAM) as embedded:
        yield embedded


@pytest.fixture(scope="session")
def broker(request: pytest.FixtureRequest) -> str:
    kind = getattr(request, "param", "tansu")
    if kind not in KINDS:
        raise ValueError(f"unknown broker kind {kind!r}: use one of {KINDS}")
    embedded: EmbeddedBroker | EmbeddedKafka = request.getfixturevalue(
        "apache_kafka" if kind == "kafka" else "tansu")
    return embedded.bootstrap


@pytest.fixture
def kafka_topic(broker: str) -> Callable[..., str]:
    def make(partitions: int = 3, name: str | None = None) -> str:
        return create_topic(broker, name, partitions)

    return make


# --- end broker -------------------------------------------------------------------------------
