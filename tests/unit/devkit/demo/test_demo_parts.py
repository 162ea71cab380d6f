"""The demo's parts without servers: dims choice, shop env, generators, report, CLI help."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from icetide.cli.live import LiveStatus
from icetide.cli.main import cli
from icetide.config import Settings
from icetide.devkit.demo import runner, shop
from icetide.devkit.demo.report import BatchCounter, DemoProgress, DemoReport, LakeCounts
from icetide.devkit.demo.runner import DemoOptions, Generators
from icetide.devkit.embedded.mariadb import MariaDBInfo
from icetide.devkit.gen.business import BusinessReport
from icetide.devkit.gen.clicks import GenReport
from icetide.errors import RuntimeSetupError
from icetide.flows.loop import BatchResult

SECRET = "s3cr3t-cdc-password"


def _info() -> MariaDBInfo:
    return MariaDBInfo(host="127.0.0.1", port=33061, socket="/tmp/x.sock", server_id=1,
                       cdc_user="icetide_cdc", cdc_password=SECRET,
                       app_user="icetide_app", app_password="app-secret")


def test_choose_dims_falls_back_to_seed_with_the_install_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shop, "mariadb_installed", lambda: False)
    mode, warning = shop.choose_dims("auto")
    assert mode == "seed" and warning and "apt-get install mariadb-server" in warning
    assert shop.choose_dims("seed") == ("seed", None)
    with pytest.raises(RuntimeSetupError, match="apt-get install mariadb-server"):
        shop.choose_dims("cdc")
    monkeypatch.setattr(shop, "mariadb_installed", lambda: True)
    assert shop.choose_dims("auto") == ("cdc", None)
    assert shop.choose_dims("seed") == ("seed", None)


def test_shop_env_resolves_the_spec_and_keeps_the_password_out_of_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(shop.PASSWORD_ENV, raising=False)
    s = shop.Shop(_info(), seeded=True)
    env = s.pipeline_env({"PATH": "/bin"})
    assert env == {"PATH": "/bin", "SHOP_HOST": "127.0.0.1", "SHOP_PORT": "33061",
                   "SHOP_USER": "icetide_cdc"}
    assert os.environ[shop.PASSWORD_ENV] == SECRET  # the `shop` source's password_env
    assert SECRET not in repr(s)


def test_the_clickstream_spec_follows_the_demo_mariadb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(shop.PASSWORD_ENV, raising=False)
    cdc = runner._load_graph(DemoOptions(), "cdc", shop.Shop(_info(), seeded=False))
    assert dict(cdc.spec.sources["shop"]) | {"port": int(cdc.spec.sources["shop"]["port"])} \
        == {"type": "mysql", "host": "127.0.0.1", "port": 33061, "user": "icetide_cdc",
            "password_env": "SHOP_PASSWORD"}
    targets = {f.target for f in cdc.flows.values()}
    assert {"dim_db.products", "dim_db.user_member", "ods_behavior.clickevent",
            "dws.product_views", "ads.daily_product_report"} <= targets
    seed = runner._load_graph(DemoOptions(), "seed", None)
    assert not {"dim_db.products", "dim_db.user_member"} & {f.target for f in seed.flows.values()}


def test_demo_port_takes_the_default_only_when_free() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert shop.demo_port(busy.getsockname()[1]) is None
    assert shop.demo_port(0) is None and shop.demo_port(None) is None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    assert shop.demo_port(free) == free


def _result(flow: str, rows: int, dlq: int = 0) -> BatchResult:
    return BatchResult(flow, {}, {}, rows, rows, dlq, None, 0.1, True)


def test_batch_counter_counts_per_flow_and_forwards() -> None:
    seen: list[str] = []
    counter = BatchCounter(lambda r: seen.append(r.flow))
    for result in (_result("a", 3, 1), _result("b", 5), _result("a", 2)):
        counter(result)
    assert counter.rows == Counter({"a": 5, "b": 5}) and counter.totals() == (10, 1)
    assert seen == ["a", "b", "a"]


def _gen_report(valid: int = 90, malformed: int = 10) -> GenReport:
    return GenReport(valid, malformed, 1.0, 100.0, "clicktopic", {"valid": valid})


def test_generators_stop_the_demo_when_their_duration_ends(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: dict[str, Any] = {}

    def clicks(bootstrap: str, topic: str, options: Any, **kw: Any) -> GenReport:
        calls["clicks"] = options
        kw["progress"](100)
        return _gen_report()

    def business(connect: Any, options: Any, stop: threading.Event) -> BusinessReport:
        calls["business"] = options
        return BusinessReport(Counter({"price": 3}))

    monkeypatch.setattr(runner, "produce_clicks", clicks)
    monkeypatch.setattr(runner, "run_business_updates", business)
    stop, progress = threading.Event(), DemoProgress()
    options = DemoOptions(duration=5, rate=10, business_rate=0.5)
    gens = Generators("127.0.0.1:1", shop.Shop(_info(), True), options, stop, progress)
    gens.start()
    assert stop.wait(5), "the generators ended but did not set stop"
    generated, changes = gens.result()
    assert generated.valid == 90 and changes is not None and changes.total == 3
    assert progress.clicks == 100
    assert calls["clicks"].duration == 5 and calls["clicks"].count == 0
    assert calls["business"].rate == 0.5 and calls["business"].database == "user_db"


def test_generators_report_a_failure_and_stop_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    def clicks(*args: Any, **kw: Any) -> GenReport:
        raise RuntimeError("broker gone")

    monkeypatch.setattr(runner, "produce_clicks", clicks)
    stop = threading.Event()
    gens = Generators("127.0.0.1:1", None, DemoOptions(), stop, DemoProgress())
    assert len(gens.threads) == 1  # no MariaDB: no business updates
    gens.start()
    with pytest.raises(RuntimeError, match="broker gone"):
        gens.result()
    assert stop.is_set()


def test_report_json_has_counts_and_checks_but_no_password(tmp_path: Path) -> None:
    from icetide.devkit.demo.reconcile import Check

    report = DemoReport(
        dims="cdc", generated=_gen_report(), business=BusinessReport(Counter({"level": 2})),
        baseline=LakeCounts(5, 1), committed={"ods_behavior.clickevent": 90}, dead_letters=10,
        drained_rows=7, checks=[Check("ODS rows", True, 95, 95)],
        settings=Settings(home=tmp_path), seconds=61.0, shop=shop.Shop(_info(), True))
    data = report.to_json()
    text = json.dumps(data)
    assert SECRET not in text and "app-secret" not in text
    assert data["ok"] and data["clicks"]["valid"] == 90 and data["business"]["total"] == 2
    assert data["checks"][0] == {"name": "ODS rows", "ok": True, "expected": 95,
                                 "actual": 95, "detail": ""}
    assert data["mariadb"]["port"] == 33061 and data["baseline"] == {"ods": 5, "dlq": 1}
    failed = DemoReport(**{**report.__dict__, "checks": [Check("x", False, 1, 2)]})
    assert not failed.ok


class _NoTables:
    def list_namespaces(self, namespace: Any = ()) -> list[Any]:
        return []

    def load_table(self, identifier: Any) -> Any:
        from pyiceberg.exceptions import NoSuchTableError

        raise NoSuchTableError(str(identifier))


def test_live_view_title_shows_the_demo_progress(tmp_path: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    progress = DemoProgress(phase="running", dims="cdc", clicks=12_345)
    view = LiveStatus(Settings(home=tmp_path), Console(file=open(os.devnull, "w")),  # noqa: SIM115
                      tables=["ods_behavior.clickevent"], catalog=_NoTables(),
                      progress=progress)
    table = view.render()
    assert isinstance(table, Table)
    assert "running" in str(table.title) and "12,345 clicks" in str(table.title)
    assert "dimensions by cdc" in str(table.title)


def test_demo_help_names_the_options() -> None:
    result = CliRunner().invoke(cli, ["demo", "--help"])
    assert result.exit_code == 0
    for text in ("--duration", "--business-rate", "--dims", "--report", "--no-live",
                 "MariaDB", "resumes"):
        assert text in result.output


def test_progress_records_the_time_per_phase() -> None:
    progress = DemoProgress(started=100.0)
    progress.history = [("running", 130.0), ("draining", 190.0)]
    assert progress.seconds(until=250.0) == {"starting": 30.0, "running": 60.0,
                                             "draining": 60.0}
    progress.enter("done")
    assert progress.phase == "done" and list(progress.seconds()) [-1] == "done"
