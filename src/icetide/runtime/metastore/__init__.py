"""The embedded catalog service: a Hive Metastore from the pyspark wheel's own jars.

``catalog.type: hive`` with no ``catalog.uri`` means "icetide's metastore": one service
per ``ICETIDE_HOME`` (Derby database under ``<home>/metastore``), bound to
``metastore.host:port`` (127.0.0.1:9083 by default; a free port when 9083 is taken and the
port is not set), started by ``icetide catalog start`` or on first use, shared by every
icetide process and by other engines (Spark, Trino, Flink, pyiceberg) that reach it by the
URI it records; it stops by itself when its home is deleted or after an idle timeout.

* :mod:`.site` — the ``hive-site.xml`` and the files of a home's metastore (no JVM);
* :mod:`.server` — the service process itself: a JVM driven over py4j that serves the
  metastore's thrift API on one address (Hive 2.3.9's own main listens on all of them);
* :mod:`.service` — the client side: find, start (detached), wait for and stop the service;
  :func:`.service.metastore_uri`, the one address every reader uses;
* :mod:`.watch` — when the service stops by itself.
"""
