"""Ingest benchmark: raw consume vs icetide Kafka → Iceberg vs a pyiceberg-only peer."""
