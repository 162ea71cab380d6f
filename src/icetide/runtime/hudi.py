"""Apache Hudi beside Iceberg in one SparkSession (``spark.hudi: true``).

A session for settings with ``spark.hudi`` gets the Hudi bundle (``jars.toml`` group
``hudi``, :func:`icetide.runtime.jars.needed_groups`) and the settings Hudi's Spark
integration needs (verified by hand with Spark 3.5.9, Iceberg 1.12.0 and Hudi 1.2.0;
docs/stack.md):

* Kryo with Hudi's registrator: Hudi ships its records between tasks as Kryo objects;
* Hudi's SQL extension after Iceberg's (both stay active: MERGE on Iceberg tables still
  goes through Iceberg's rules);
* ``spark_catalog`` = Hudi's ``HoodieCatalog`` — icetide's Iceberg catalog has a name of
  its own (``catalog.name``, default ``lake``), so the two never share a name; a catalog
  named ``spark_catalog`` is refused;
* with a Hive catalog, ``spark_catalog`` is Spark's Hive catalog on the SAME metastore
  (``spark.sql.catalogImplementation=hive``, ``hive.metastore.uris``): Hudi tables synced
  there read by name as ``spark_catalog.<db>.<table>`` beside ``<catalog.name>.<db>.<t>``.

Every other session is left exactly as it was (no jar, no setting): the class archive of
a default session stays valid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icetide.config import Settings
from icetide.errors import ConfigError
from icetide.runtime.catalogs import ICEBERG_EXTENSIONS, catalog_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

HUDI_EXTENSIONS = "org.apache.spark.sql.hudi.HoodieSparkSessionExtension"
HOODIE_CATALOG = "org.apache.spark.sql.hudi.catalog.HoodieCatalog"
KRYO = "org.apache.spark.serializer.KryoSerializer"
KRYO_REGISTRATOR = "org.apache.spark.HoodieSparkKryoRegistrar"
SESSION_CATALOG = "spark_catalog"
#: Why Hudi is refused beside a glue catalog (docs/catalogs.md, "glue").
GLUE_REFUSED = (
    "spark.hudi with catalog.type glue: icetide's Hudi tables would not be in the catalog. "
    "Hudi syncs tables to Glue with org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool, which is "
    "in org.apache.hudi:hudi-aws-bundle, not in the Spark bundle; that jar does not resolve "
    "from Maven Central here for 1.2.0 (nor 1.1.0, 1.0.2, 0.15.0), and icetide syncs to a Hive "
    "Metastore only. Keep Hudi targets on a hive catalog, or set spark.hudi: false")


def hudi_conf(settings: Settings) -> dict[str, str]:
    """Hudi's Spark settings for ``settings`` (empty unless ``spark.hudi``)."""
    if not settings.spark.hudi:
        return {}
    if settings.catalog.name == SESSION_CATALOG:
        raise ConfigError(
            f"catalog.name {SESSION_CATALOG!r} is the Spark catalog Hudi takes "
            "(HoodieCatalog) when spark.hudi is true: name the Iceberg catalog otherwise, "
            "e.g. catalog.name: lake, or set spark.hudi: false")
    if settings.catalog.type == "glue":
        raise ConfigError(GLUE_REFUSED)
    conf = {
        "spark.serializer": KRYO,
        "spark.kryo.registrator": KRYO_REGISTRATOR,
        "spark.sql.extensions": f"{ICEBERG_EXTENSIONS},{HUDI_EXTENSIONS}",
        f"spark.sql.catalog.{SESSION_CATALOG}": HOODIE_CATALOG,
    }
    if settings.catalog.type == "hive":  # Hudi tables by name: the same metastore
        conf["spark.sql.catalogImplementation"] = "hive"
        conf["spark.hadoop.hive.metastore.uris"] = catalog_properties(settings)["uri"]
    return conf


def keep_stdout_clean(session: SparkSession) -> None:
    """Send the driver JVM's ``System.out`` to its stderr in a session with Hudi.

    The bundle sizes records with (shaded) JOL, which on first use tries to attach to its
    own JVM and, refused in a container, prints ``# WARNING: Unable to attach ...`` on
    the JVM's stdout — the process's, where ``icetide sql --format json`` prints its
    result (seen with Hudi 1.2.0; JOL's skip flags only change the wording). Nothing of
    icetide's output comes from the JVM's stdout: Python prints it."""
    jvm = session.sparkContext._jvm
    if jvm is not None:
        jvm.java.lang.System.setOut(jvm.java.lang.System.err)
