"""The source registry: typed configs per type, errors naming the spec file and the key."""

from __future__ import annotations

import sys

import pytest

from icetide.config import Settings
from icetide.errors import PipelineError
from icetide.sources.kafka import KafkaSource
from icetide.sources.registry import SOURCE_TYPES, build_source


def test_a_source_type_is_imported_only_when_used() -> None:
    for module in SOURCE_TYPES.values():
        sys.modules.pop(module, None)
    src = build_source("clicks", {"type": "kafka", "topic": "clicktopic"}, Settings())
    assert isinstance(src, KafkaSource) and src.key == "kafka:clicktopic"
    assert "icetide.sources.kafka.config" in sys.modules
    assert "icetide.sources.mysql.config" not in sys.modules


@pytest.mark.parametrize(("cfg", "message"), [
    ({"type": "kafka", "topic": "t", "topik": "u"},
     r"p/icetide-pipeline\.yml: kafka source 'clicks': unknown key 'topik' \(check the "
     r"spelling; allowed: type, topic"),
    ({"type": "kafka"}, r"kafka source 'clicks': missing required key 'topic'"),
    ({"type": "kafkaa", "topic": "t"}, r"source type 'kafkaa' is unknown; supported: debezium"),
    ({"type": "mysql", "host": "h", "user": "u", "password": "x"},
     r"'password' must not be written in the spec file.*password_env"),
    ({"type": "mysql", "host": "h", "user": "u", "port": "many"},
     r"mysql source 'clicks': port='many': .*valid integer"),
])
def test_errors_name_the_spec_file_and_the_key(cfg: dict[str, object], message: str) -> None:
    with pytest.raises(PipelineError, match=message):
        build_source("clicks", cfg, Settings(), origin="p/icetide-pipeline.yml")


def test_mysql_tls_by_config() -> None:
    src = build_source("shop", {"type": "mysql", "host": "db", "user": "u", "tls": "verify",
                                "tls_ca": "/etc/ssl/ca.pem"}, Settings())
    conn = src.config.connection  # type: ignore[attr-defined]
    # pymysql's own arguments: given ssl_verify_cert it rebuilds an ``ssl`` dict from them
    assert (conn["ssl_ca"], conn["ssl_verify_cert"], conn["ssl_verify_identity"]) == (
        "/etc/ssl/ca.pem", True, True)
    assert "ssl" not in conn and "ssl_disabled" not in conn
