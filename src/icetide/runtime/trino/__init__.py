"""Trino beside Spark and DuckDB: its server by Maven coordinates (``dist``), a Java new
enough for it (``java``), its files (``site``) and the local server (``server``)."""
