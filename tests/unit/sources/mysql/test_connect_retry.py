"""An unreachable MySQL server is retried for retry_timeout seconds, then named."""

from __future__ import annotations

import time

import pytest

from icetide.devkit.embedded.process import free_port
from icetide.errors import SourceUnavailableError
from icetide.sources.mysql.source import MySqlSourceConfig, connect_with_retry


def test_unreachable_server_is_retried_then_reported() -> None:
    port = free_port()
    config = MySqlSourceConfig(name="shop", connection={"host": "127.0.0.1", "port": port,
                                                        "user": "u", "password": "p"},
                               include=(".*",), retry_timeout=1.5)
    began = time.monotonic()
    with pytest.raises(SourceUnavailableError, match=rf"MySQL at 127.0.0.1:{port} unreachable "
                                                     r"for source mysql:shop.*retry_timeout"):
        connect_with_retry(config, "mysql:shop")
    assert 0.5 < time.monotonic() - began < 5
