"""The embedded brokers: lifecycle, errors, and ``icetide broker start`` (Tansu or Kafka)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient

from icetide.cli.broker_cmd import broker as broker_cli
from icetide.devkit.embedded.broker import EmbeddedBroker, tansu_binary
from icetide.devkit.embedded.process import free_port, port_in_use
from icetide.errors import RuntimeSetupError

pytestmark = pytest.mark.kafka


def topics(bootstrap: str) -> set[str]:
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5).topics)


def test_start_stop_and_memory_only(tmp_path: Path) -> None:
    from tests.conftest import create_topic

    assert os.access(tansu_binary(), os.X_OK)
    with EmbeddedBroker(None, tmp_path) as embedded:
        assert embedded.running and embedded.bootstrap == f"127.0.0.1:{embedded.port}"
        assert port_in_use(embedded.port)
        create_topic(embedded.bootstrap, "kept", 2)
        assert "kept" in topics(embedded.bootstrap)
        port = embedded.port
    assert not embedded.running and not port_in_use(port)
    assert "listening on" in (tmp_path / "broker.log").read_text()
    with EmbeddedBroker(port, tmp_path) as again:  # same port, fresh (in-memory) state
        assert "kept" not in topics(again.bootstrap)


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(RuntimeSetupError, match=f"port {port} .* already in use.*--port"):
            EmbeddedBroker(port, tmp_path).start()
        result = CliRunner().invoke(broker_cli, ["start", "--port", str(port)])
        assert isinstance(result.exception, RuntimeSetupError)


def test_kill_and_restart(tmp_path: Path) -> None:
    embedded = EmbeddedBroker(free_port(), tmp_path)
    embedded.start()
    pid = embedded.pid
    embedded.kill()
    assert pid is not None and not embedded.running
    embedded.start()
    assert embedded.running and embedded.pid != pid
    embedded.stop()


def _broker_cli(port: int, tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    """``icetide broker start --port PORT`` with its home under ``tmp_path``."""
    icetide = Path(sys.executable).with_name("icetide")
    return subprocess.Popen(
        [str(icetide), "broker", "start", "--port", str(port)], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
        env={**os.environ, "ICETIDE_HOME": str(tmp_path / "home"), **env})


@pytest.mark.parametrize("stop_with", [signal.SIGINT, signal.SIGTERM])
def test_cli_runs_until_ctrl_c(tmp_path: Path, stop_with: signal.Signals) -> None:
    port = free_port()
    proc = _broker_cli(port, tmp_path)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert f"bootstrap: 127.0.0.1:{port}" in first, first
        assert topics(f"127.0.0.1:{port}") == set()
        time.sleep(0.2)
        proc.send_signal(stop_with)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
        assert "broker stopped" in out
        assert not port_in_use(port)
        assert (tmp_path / "home" / "broker" / "broker.log").is_file()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_starts_apache_kafka_when_kafka_embedded_says_so(tmp_path: Path) -> None:
    """``kafka.embedded: kafka`` (here from the environment): Apache Kafka, whose topics
    outlive a restart on the same home."""
    from tests.conftest import create_topic

    port = free_port()
    for run in range(2):
        proc = _broker_cli(port, tmp_path, ICETIDE_KAFKA__EMBEDDED="kafka")
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            assert f"Apache Kafka (KRaft) ready; bootstrap: 127.0.0.1:{port}" in first, first
            if run == 0:
                create_topic(f"127.0.0.1:{port}", "kept", 2)
            assert "kept" in topics(f"127.0.0.1:{port}")
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=60)
            assert proc.returncode == 0 and "broker stopped" in out, out
            assert not port_in_use(port)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
