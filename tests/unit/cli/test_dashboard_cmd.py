"""``icetide dashboard``: help, and no listening beyond loopback without a token."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from icetide.cli.main import main
from icetide.devkit.embedded.process import free_port, port_in_use


def test_dashboard_answers_help(capsys: pytest.CaptureFixture[str]) -> None:
    main(["dashboard", "--help"])
    out = capsys.readouterr().out
    assert "--port" in out and "--host" in out and "ICETIDE_DASHBOARD__TOKEN" in out


def test_another_host_without_a_token_is_refused_naming_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICETIDE_HOME", str(tmp_path))
    monkeypatch.delenv("ICETIDE_DASHBOARD__TOKEN", raising=False)
    monkeypatch.delenv("ICETIDE_CONFIG", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(["dashboard", "--host", "0.0.0.0", "--port", "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "ICETIDE_DASHBOARD__TOKEN" in err and "0.0.0.0" in err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_it_cleanly(tmp_path: Path, signum: int) -> None:
    config = tmp_path / "icetide.yaml"
    config.write_text(f"home: {tmp_path}\ncatalog: {{name: lake, type: hadoop}}\n")
    port = free_port()
    proc = subprocess.Popen([str(Path(sys.executable).with_name("icetide")), "dashboard",
                             "--config", str(config), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not port_in_use(port, "127.0.0.1"):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=30) as r:
            assert json.load(r)["status"] == []
    finally:
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert err == "dashboard stopped\n"
