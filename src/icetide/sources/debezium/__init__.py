"""Debezium JSON change topics (one table per topic) for ``create_auto_cdc_flow``."""

from icetide.cdc.refs import changes
from icetide.sources.debezium.source import DebeziumConfig, DebeziumSource, decode_messages

__all__ = ["DebeziumConfig", "DebeziumSource", "changes", "decode_messages"]
