"""Which Flink, Iceberg and connector versions fit together, and the jars they come as.

PyFlink from PyPI (``apache-flink``) ships Flink itself (``pyflink/lib``); the job adds the
connectors by Maven coordinates, resolved with icetide's own resolver (Ivy, into the shared
jar cache) on the benchmark's first run: a bench-only list, never on Spark's class path and
never fetched by ``make install``.

Pairing (Maven Central, 2026-11): Flink connectors carry the Flink minor they are built
for as a suffix (``3.4.0-1.20``) and Iceberg names it in the artifact
(``iceberg-flink-runtime-1.20``). Flink 1.20 (the LTS line) is the newest for which every
piece the seed's job uses is published: Iceberg's runtime (newest served: 1.11.0 for Flink
1.20, 2.0 and 2.1; no Flink runtime of Iceberg 1.12.0 is on Maven Central), the Kafka
connector (3.4.0-1.20) and the JDBC connector with its MySQL dialect (3.3.0-1.20; for Flink
2.x only ``flink-connector-jdbc-core`` 4.0.0-2.0 is served, without the MySQL dialect, so
no JDBC lookup on MariaDB). Iceberg 1.11 and 1.12 write the same table format (v2).

Flink CDC's connectors carry no Flink suffix: each release line names the Flink minors it
is built and tested for (Flink CDC's docs, "Supported Flink Versions"), kept in
:data:`CDC_FLINK`. ``flink-sql-connector-mysql-cdc`` is a shaded jar with Debezium in it;
since Flink CDC 3.1 it leaves the MySQL driver out (GPL), which the JDBC lookup brings.
"""

from __future__ import annotations

from dataclasses import dataclass

from icetide.errors import RuntimeSetupError
from icetide.runtime.jars import JarGroup, JarSpec

#: the groups of the bench-only jar list (its own cache manifest): the job's connectors
#: (Flink's ``pipeline.jars``) and the Hadoop client the Iceberg catalog loads from the
#: JVM's own class path (PyFlink puts ``$HADOOP_CLASSPATH`` there)
JAR_GROUP = "flink-peer"
HADOOP_GROUP = "flink-peer-hadoop"
#: the CDC job's connector, a group of its own: the other jobs never load it
CDC_GROUP = "flink-peer-cdc"
#: Flink CDC release line → the Flink minors it supports
CDC_FLINK = {"3.2": ("1.17", "1.18", "1.19"), "3.3": ("1.19", "1.20"),
             "3.4": ("1.19", "1.20")}
#: what the shaded CDC connector's POM adds that it holds already, or Flink does
CDC_EXCLUDE = ("org.apache.flink:flink-cdc-runtime", "org.apache.flink:flink-cdc-common",
               "org.apache.flink:flink-shaded-guava", "org.slf4j:slf4j-api")
#: transitive dependencies left out: flink-dist (in PyFlink) has flink-connector-base; the
#: JDBC connector's other dialects are not used; X DevAPI's protobuf neither
EXCLUDE = ("org.apache.flink:flink-connector-base", "com.google.protobuf:protobuf-java",
           *(f"org.apache.flink:flink-connector-jdbc-{db}" for db in
             ("trino", "sqlserver", "oceanbase", "oracle", "db2", "cratedb", "postgres")))


def flink_minor(version: str) -> str:
    """``1.20.5`` → ``1.20``."""
    parts = version.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise RuntimeSetupError(f"Flink version {version!r} is not MAJOR.MINOR[.PATCH], "
                                "e.g. 1.20.5")
    return ".".join(parts[:2])


def connector_fits(connector_version: str, flink: str) -> bool:
    """Whether a Flink connector release (``3.4.0-1.20``) is built for ``flink``."""
    _, _, built_for = connector_version.rpartition("-")
    return built_for == flink_minor(flink)


def cdc_fits(cdc_version: str, flink: str) -> bool:
    """Whether a Flink CDC release (``3.3.0``) supports ``flink`` (:data:`CDC_FLINK`)."""
    return flink_minor(flink) in CDC_FLINK.get(".".join(cdc_version.split(".")[:2]), ())


@dataclass(frozen=True)
class Pairing:
    """One set of versions that fit together."""

    flink: str = "1.20.5"  # PyPI apache-flink (and apache-flink-libraries)
    iceberg: str = "1.11.0"  # org.apache.iceberg:iceberg-flink-runtime-<minor>
    kafka_connector: str = "3.4.0-1.20"  # org.apache.flink:flink-connector-kafka
    jdbc_connector: str = "3.3.0-1.20"  # org.apache.flink:flink-connector-jdbc (+ MySQL)
    mysql_driver: str = "9.1.0"  # com.mysql:mysql-connector-j (MariaDB speaks its protocol)
    hadoop: str = "3.3.6"  # the shaded Hadoop client the Iceberg hadoop catalog needs
    mysql_cdc: str = "3.3.0"  # org.apache.flink:flink-sql-connector-mysql-cdc

    def check(self) -> None:
        """Refuse connector releases built for another Flink minor."""
        for name, version in (("Kafka", self.kafka_connector), ("JDBC", self.jdbc_connector)):
            if not connector_fits(version, self.flink):
                raise RuntimeSetupError(
                    f"the Flink {name} connector {version} is built for Flink "
                    f"{version.rpartition('-')[2]}, not {self.flink}: use a release ending "
                    f"in -{flink_minor(self.flink)}")
        if not cdc_fits(self.mysql_cdc, self.flink):
            raise RuntimeSetupError(
                f"Flink CDC {self.mysql_cdc} does not support Flink {self.flink} (its lines: "
                f"{CDC_FLINK}): pick a release whose line lists {flink_minor(self.flink)}")

    @property
    def pip_requirement(self) -> str:
        return f"apache-flink=={self.flink}"

    def coordinates(self) -> tuple[str, ...]:
        """The Maven coordinates of the job's connectors."""
        self.check()
        return (
            f"org.apache.iceberg:iceberg-flink-runtime-{flink_minor(self.flink)}:{self.iceberg}",
            f"org.apache.flink:flink-connector-kafka:{self.kafka_connector}",
            f"org.apache.flink:flink-connector-jdbc:{self.jdbc_connector}",
            f"com.mysql:mysql-connector-j:{self.mysql_driver}",
        )

    def cdc_coordinates(self) -> tuple[str, ...]:
        """The CDC job's connector (the MySQL driver comes with :meth:`coordinates`)."""
        self.check()
        return (f"org.apache.flink:flink-sql-connector-mysql-cdc:{self.mysql_cdc}",)

    def hadoop_coordinates(self) -> tuple[str, ...]:
        """The shaded Hadoop client (Iceberg's hadoop catalog needs its Configuration)."""
        return (f"org.apache.hadoop:hadoop-client-api:{self.hadoop}",
                f"org.apache.hadoop:hadoop-client-runtime:{self.hadoop}")

    def jar_spec(self) -> JarSpec:
        """The bench-only jar list: groups for a JVM of its own (PyFlink's)."""
        why = f"the Flink {self.flink} peer benchmark (benchmarks/peers/flink)"
        return JarSpec(groups={
            JAR_GROUP: JarGroup(why=f"{why}: connectors", coordinates=self.coordinates(),
                                jvm="own", exclude=EXCLUDE),
            HADOOP_GROUP: JarGroup(why=f"{why}: Hadoop client",
                                   coordinates=self.hadoop_coordinates(), jvm="own"),
            CDC_GROUP: JarGroup(why=f"{why}: MySQL CDC", coordinates=self.cdc_coordinates(),
                                jvm="own", exclude=CDC_EXCLUDE),
        })


DEFAULT = Pairing()
