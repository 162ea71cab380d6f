"""``icetide demo`` serves the dashboard while it runs (and not with --no-dashboard)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from icetide.cli.demo_cmd import _dashboard, demo
from icetide.config import CatalogConfig, DashboardConfig, Settings
from icetide.devkit.embedded.process import free_port


def test_the_demo_serves_the_dashboard_and_prints_its_url(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(home=tmp_path, catalog=CatalogConfig(name="lake", type="hadoop"),
                        dashboard=DashboardConfig(port=free_port()))
    with _dashboard(settings, True, None):
        url = capsys.readouterr().out.strip().removeprefix("dashboard: ")
        assert url == f"http://127.0.0.1:{settings.dashboard.port}/"
        assert httpx.get(url + "api/state?x=1", timeout=10).json()["status"] == []
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, timeout=2)
    with _dashboard(settings, False, None):
        assert capsys.readouterr().out == ""


def test_the_demo_has_a_no_dashboard_switch() -> None:
    result = CliRunner().invoke(demo, ["--help"])
    assert "--no-dashboard" in result.output and "--dashboard-port" in result.output
