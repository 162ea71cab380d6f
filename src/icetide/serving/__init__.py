"""Serving the lake to other tools: the HiveServer2 (Thrift JDBC/ODBC) SQL endpoint.

Sits beside ``flows`` and ``query`` in the layers: it needs the runtime (the SparkSession,
Java, jars) and config only, and the application layer (``Context.serve_sql``) calls it.
"""
