"""The process-wide SparkSession with Iceberg, built from :class:`~icetide.config.Settings`.

Spark allows one SparkContext per process, so :func:`get_spark` caches the session and
refuses to build a second one for different settings (call :func:`stop_spark` first).
The figures behind the defaults below are in docs/benchmarks-history.md ("The figures
behind the code's settings").
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from icetide.config import Settings, SparkConfig
from icetide.errors import RuntimeSetupError
from icetide.runtime import pydaemon
from icetide.runtime.catalogs import catalog_conf, prepare_catalog
from icetide.runtime.cds import shared_archive_options
from icetide.runtime.classpath import session_jars
from icetide.runtime.hudi import hudi_conf, keep_stdout_clean
from icetide.runtime.jars import jar_cache
from icetide.runtime.java import JavaInfo, check_java
from icetide.runtime.py4j_memo import install as memoize_java_names
from icetide.runtime.pyenv import executor_python
from icetide.runtime.startup import phase

log = logging.getLogger(__name__)

#: The driver JVM's log4j2 configuration (package data beside this module).
_LOG4J2 = Path(__file__).with_name("log4j2-spark.properties")
_SECRET_WORDS = ("password", "secret", "token", "credential")

_lock = threading.Lock()
_current: tuple[Settings, SparkSession] | None = None


def _log4j_config(cache_dir: Path) -> Path:
    """:data:`_LOG4J2` copied into ``cache_dir`` (rewritten when it differs)."""
    wanted = _LOG4J2.read_text()
    path = cache_dir / "log4j2-icetide.properties"
    if not path.is_file() or path.read_text() != wanted:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(wanted)
        os.replace(tmp, path)
    return path


def _loopback_master(master: str) -> bool:
    """A master whose executors run on this machine: local, or a cluster on loopback."""
    return master.startswith("local") or bool(
        re.match(r"^spark://(127\.0\.0\.1|localhost)(:\d+)?$", master))


def _cluster_conf(spark: SparkConfig) -> dict[str, str]:
    """Where executors reach the driver, and the executors' size."""
    conf: dict[str, str] = {}
    host = spark.driver_host or ("127.0.0.1" if _loopback_master(spark.master) else None)
    if host is not None:
        conf["spark.driver.bindAddress"] = host
        conf["spark.driver.host"] = host
    for key, value in (("spark.executor.memory", spark.executor_memory),
                       ("spark.executor.cores", spark.executor_cores),
                       ("spark.cores.max", spark.max_cores)):
        if value is not None:
            conf[key] = str(value)
    return conf


_JVM_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)b?\s*$", re.IGNORECASE)


def jvm_bytes(size: str) -> int | None:
    """A JVM memory size (``"2g"``, ``"4096m"``, ``"512k"``) in bytes; None if not one."""
    match = _JVM_SIZE.match(size)
    if match is None:
        return None
    unit = "bkmgt".index((match.group(2) or "b").lower())
    return int(match.group(1)) << (10 * unit)


def page_size(heap: int) -> int:
    """Tungsten's memory page for a driver heap of ``heap`` bytes: a power of two of about
    heap/8192, at least 64 KiB.

    Spark's own choice is up to 64 MiB (execution memory / cores / 16): every hash
    aggregation, sort and shuffle task of every micro-batch then allocates and zeroes at
    least one such ``long[]``, however few rows it holds, and G1 places each as a
    humongous object straight into the old generation. heap/8192 stays below half of
    G1's region (heap/2048 rounded down: no humongous pages), and 8,192 pages — a task's
    page-table limit — still hold more than the whole execution pool (0.6 × heap). No
    speed-up is measured yet."""
    target = max(64 * 1024, heap // 8192)
    return 1 << (target.bit_length() - 1)


#: Shuffle partitions when ``spark.shuffle_partitions`` is not set.
DEFAULT_SHUFFLE_PARTITIONS = 4


def local_cores(master: str, cpu_count: int | None = None) -> int | None:
    """The task slots of a ``local`` master (``local[*]``: the machine's cores); ``None``
    for any other master."""
    found = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if found is None:
        return None
    slots = found.group(1)
    if slots is None:
        return 1
    return (cpu_count or os.cpu_count() or 1) if slots == "*" else int(slots)


def shuffle_partitions(spark: SparkConfig, cpu_count: int | None = None) -> int:
    """The configured count, else 4 — on a ``local`` master no more than its cores.

    A micro-batch of a few thousand rows gains nothing from more shuffle tasks than
    cores: each one more deserializes the plan and builds its projections, so fewer made
    batches and DWS freshness faster on 2 cores. Clusters keep 4 unless set
    (docs/deploy.md: 2–3 × the executor cores)."""
    if spark.shuffle_partitions is not None:
        return spark.shuffle_partitions
    cores = local_cores(spark.master, cpu_count)
    return DEFAULT_SHUFFLE_PARTITIONS if cores is None else min(DEFAULT_SHUFFLE_PARTITIONS, cores)


def _one_machine_conf(master: str, driver_memory: str) -> dict[str, str]:
    """Spark defaults for micro-batches on one machine (a ``local`` master); clusters keep
    Spark's own."""
    if not master.startswith("local"):
        return {}
    conf: dict[str, str] = {}
    heap = jvm_bytes(driver_memory)
    if heap is not None:
        conf["spark.buffer.pageSize"] = f"{page_size(heap) // 1024}k"
    # one machine, micro-batches of a few thousand rows: adaptive execution submits every
    # shuffle stage as a job of its own and re-plans (and re-describes) the query after
    # each, which costs more than it saves here (fewer jobs per MERGE, shorter MERGE
    # batches). Clusters keep Spark's default (on).
    conf["spark.sql.adaptive.enabled"] = "false"
    return conf


#: The driver JVM's garbage collector on a ``local`` master, where it is also the only
#: executor. G1 (the JVM's default) works beside the application on its 2 cores: its
#: write barriers and concurrent threads cost CPU on every batch. The throughput
#: collector stops the JVM for its young collections instead, which made ingest batches
#: and ODS / DWS freshness at 20,000 events/s faster. Its heap starts at the full driver
#: memory: grown from the JVM's small default instead, it takes full collections while a
#: new pipeline fills it (a slower first minute at 2,000 events/s). Clusters keep their
#: own (``spark.executor.extraJavaOptions``).
LOCAL_GC = "-XX:+UseParallelGC"


def driver_java_options(master: str, log4j: Path | None = None,
                        driver_memory: str | None = None, extra: Sequence[str] = ()) -> str:
    """``spark.driver.extraJavaOptions``: the log4j configuration, ``extra`` (e.g. the
    class archive's), and on a ``local`` master :data:`LOCAL_GC` with the heap's initial
    size at ``driver_memory`` (``spark.conf`` may replace the whole string)."""
    options = [] if log4j is None else [f"-Dlog4j.configurationFile=file:{log4j}"]
    options.extend(extra)
    if local_cores(master) is not None:  # not local-cluster: its executors are JVMs apart
        options.append(LOCAL_GC)
        if driver_memory is not None and jvm_bytes(driver_memory) is not None:
            options.append(f"-Xms{driver_memory.strip()}")
    return " ".join(options)


def _base_conf(settings: Settings) -> dict[str, str]:
    """What every session of ``settings`` sets, whatever its master and jars."""
    spark = settings.spark
    return {
        "spark.master": spark.master,
        "spark.app.name": spark.app_name,
        "spark.driver.memory": spark.driver_memory,
        "spark.sql.shuffle.partitions": str(shuffle_partitions(spark)),
        # the pipeline scheduler runs each flow's batch in a pool of its own
        # (engine/scheduler.py): FAIR shares executors between concurrent batches
        "spark.scheduler.mode": "FAIR",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": str(settings.path("spark-warehouse")),
        # no Hive metastore: the lake has its own catalog, and a Hive one would leave a
        # metastore_db/ in the working directory (also when the SQL server starts)
        "spark.sql.catalogImplementation": "in-memory",
        # a continuous pipeline cycles through ~200 generated classes (every flow's stages,
        # maintenance): with Spark's default of 100 cached, it compiles them again and again
        "spark.sql.codegen.cache.maxEntries": "2000",
        # every query's plan is described for the (disabled) UI's SQL tab, again on each
        # adaptive re-plan; "formatted" also numbers and lists every operator's fields
        # (ExplainUtils showed in the driver JVM's CPU profile). EXPLAIN keeps its own mode.
        "spark.sql.ui.explainMode": "simple",
        # a batch's decoded rows live in Spark's cache for two or three passes (count,
        # dead letters, write) and are then dropped: compressing them cost more than it
        # saved
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # Python workers that do not re-read pyspark.zip and the spark-core jar on every
        # task (runtime/pydaemon.py)
        "spark.python.daemon.module": pydaemon.MODULE,
    }


def spark_conf(
    settings: Settings, jars: Sequence[Path], log4j: Path | None = None,
    python_conf: Mapping[str, str] | None = None, *, driver_options: Sequence[str] = (),
) -> dict[str, str]:
    """The complete Spark conf for ``settings`` (pure: no JVM). ``python_conf`` is the
    executors' Python environment (:func:`icetide.runtime.pyenv.executor_python`);
    ``driver_options`` more driver JVM options (the class archive's). User ``spark.conf``
    wins."""
    spark = settings.spark
    conf = _base_conf(settings)
    conf["spark.driver.extraClassPath"] = os.pathsep.join(str(j) for j in jars)
    if local_cores(spark.master) is None:  # executors in JVMs of their own fetch the jars
        conf["spark.jars"] = ",".join(str(j) for j in jars)
    # A local master's executor is the driver JVM, whose class path has the jars already:
    # listed in spark.jars too, its first task copied every one (52 MB) into a work
    # directory and opened a class loader over the copies, on a restart's first batch.
    memory = spark.conf.get("spark.driver.memory", spark.driver_memory)
    conf.update(_cluster_conf(spark))
    conf.update(_one_machine_conf(spark.master, memory))
    conf.update(python_conf or {})
    java = driver_java_options(spark.master, log4j, memory, driver_options)
    if java:
        conf["spark.driver.extraJavaOptions"] = java
    conf.update(catalog_conf(settings))
    conf.update(hudi_conf(settings))
    conf.update(spark.conf)
    return conf


def redacted(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with secret values replaced, for logging."""
    return {
        k: "***" if any(w in k.lower() for w in _SECRET_WORDS) else v for k, v in conf.items()
    }


def _alive(session: SparkSession) -> bool:
    return session.sparkContext._jsc is not None


def _build(settings: Settings, extra_jars: Sequence[Path]) -> SparkSession:
    started = time.perf_counter()
    java = check_java()
    phase("java_checked")
    jars = list(dict.fromkeys([*session_jars(settings), *extra_jars]))
    phase("jars_listed")
    prepare_catalog(settings)
    phase("catalog_service")
    python, python_conf = executor_python(settings)
    phase("python_env")
    os.environ["PYSPARK_PYTHON"] = python
    if _loopback_master(settings.spark.master):
        os.environ.setdefault("SPARK_LOCAL_IP", settings.spark.driver_host or "127.0.0.1")
    cache = jar_cache(settings)
    shared = shared_archive_options(cache, java, jars)
    phase("class_archive")
    conf = spark_conf(settings, jars, _log4j_config(cache), python_conf, driver_options=shared)
    session = _start(settings, conf, java)
    log.info(
        "SparkSession %s (catalog %s, %s; %s) started in %.1fs",
        settings.spark.master, settings.catalog.name, settings.catalog.type,
        "class archive" if shared else "no class archive", time.perf_counter() - started,
    )
    return session


def _start(settings: Settings, conf: Mapping[str, str], java: JavaInfo) -> SparkSession:
    log.debug("Spark conf: %s", redacted(dict(conf)))
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as exc:
        raise RuntimeSetupError(
            f"Spark failed to start with master {settings.spark.master!r} and Java "
            f"{java.version} ({java.executable}): {exc}; check spark.master and the log above"
        ) from exc
    session.sparkContext.setLogLevel("WARN")
    if settings.spark.hudi:
        keep_stdout_clean(session)
    memoize_java_names()
    _jvm_phases(session)
    _ready_jdbc_catalog(session, settings)
    return session


#: What Iceberg 1.12's ``JdbcCatalog.initialize`` raises when the ``ALTER TABLE`` adding
#: its V1 column (``iceberg_type``) to a fresh database finds the column already added by
#: another initializer of the same database (seen once in ``test_two_runs``: the run's
#: first catalog use failed and stopped its flow); initialized again, it finds the column.
_JDBC_SCHEMA_RACE = "Cannot check and eventually update SQL schema"


def _ready_jdbc_catalog(session: SparkSession, settings: Settings) -> None:
    """Initialize a ``jdbc`` catalog now, on this thread, once more after the schema race
    above, before flows, warm-up and compile threads first use it."""
    from tenacity import stop_after_attempt, wait_fixed

    from icetide.runtime.retry import retrying

    if settings.catalog.type != "jdbc":
        return

    def retried(failure: object, seconds: float) -> None:
        log.info("the jdbc catalog's schema was updated meanwhile; initializing it again")

    manager = session._jsparkSession.sessionState().catalogManager()
    retrying(lambda exc: _JDBC_SCHEMA_RACE in str(exc), wait=wait_fixed(0.2),
             stop=stop_after_attempt(5), on_retry=retried)(manager.catalog, settings.catalog.name)


def _jvm_phases(session: SparkSession) -> None:
    """The JVM's own start (after spark-submit's launcher), the SparkContext's, and now."""
    jvm = session.sparkContext._jvm
    if jvm is not None:
        started = jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime()
        phase("jvm_started", int(started) / 1000)
    phase("spark_context", session.sparkContext.startTime / 1000)
    phase("spark_session")


def _spark_shaping(settings: Settings) -> Settings:
    """``settings`` without the sections that do not shape the session (the SQL server's:
    a server with a password runs on the session every other command uses)."""
    return settings.model_copy(update={"sql_server": None})


def get_spark(settings: Settings, extra_jars: Sequence[Path] = ()) -> SparkSession:
    """The process-wide SparkSession for ``settings``; built on first call.

    ``extra_jars`` are added to ``spark.jars`` and the driver class path of a new session
    (e.g. a JDBC driver); they are ignored when the session already exists.
    """
    global _current
    with _lock:
        if _current is not None and _alive(_current[1]):
            if _spark_shaping(_current[0]) != _spark_shaping(settings):
                raise RuntimeSetupError(
                    "a SparkSession for different settings is already running in this process "
                    f"(catalog {_current[0].catalog.name!r}, home {_current[0].home}): "
                    "call icetide.runtime.session.stop_spark() first"
                )
            return _current[1]
        if SparkContext._active_spark_context is not None:
            raise RuntimeSetupError(
                "a SparkContext not created by icetide is already running: stop it "
                "(spark.stop()) so icetide can start one with the Iceberg jars and catalog"
            )
        session = _build(settings, extra_jars)
        _current = (settings, session)
        return session


def stop_spark() -> None:
    """Stop the process-wide session, if any."""
    global _current
    with _lock:
        if _current is not None:
            _current[1].stop()
            _current = None
            log.info("SparkSession stopped")
