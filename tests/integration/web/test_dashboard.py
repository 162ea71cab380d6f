"""The dashboard in a real browser (Debian chromium) over tables a real Kafka flow wrote:
the numbers equal ``icetide status --format json``, they update live when another batch
commits, the query box answers, refuses DML and survives bad SQL, dead letters drill down;
with the broker down the page renders at once and Ctrl-C stops the server cleanly; the
page fits a laptop screen (1360 px) and names wrap only after their dots."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from playwright.sync_api import Locator, Page, expect, sync_playwright
from pyspark.sql import SparkSession

from icetide.app.context import Context
from icetide.cli.status_cmd import status
from icetide.config import Settings
from icetide.devkit.embedded.process import free_port, port_in_use
from icetide.devkit.gen.clicks import GenOptions, GenReport, produce_clicks
from icetide.engine.run import PipelineRun
from icetide.pipelines import load_pipeline
from icetide.web.app import WebOptions
from icetide.web.serve import serve_in_background
from tests.conftest import create_topic
from tests.integration.app.test_status import _pipeline
from tests.integration.web.demo_state import demo_state

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
TABLE = "web_ods.clicks"  # test_status's pipeline in a database of its own
DIM = "web_dim.products"  # read by the pipeline's code, declared by none of its files
LOOKUP = '''
from icetide import pipelines as dp


def products():
    """How a flow of another configuration looks products up (nothing declares it here)."""
    return dp.read("web_dim.products")
'''


@pytest.fixture
def page() -> Iterator[Page]:
    assert Path(CHROMIUM).exists(), (
        f"{CHROMIUM} missing: scripts/install.sh --test installs Debian's chromium")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 1100})
        finally:
            browser.close()


def _run_once(spark: SparkSession, settings: Settings, folder: Path) -> None:
    with PipelineRun(spark, settings, load_pipeline(folder)) as run:
        run.run_once()


def _config(settings: Settings, folder: Path) -> Path:
    config = folder / "icetide.yaml"
    config.write_text(yaml.safe_dump(settings.model_dump(mode="json", exclude_none=True)))
    return config


def _status_json(settings: Settings, folder: Path, tmp_path: Path) -> dict[str, object]:
    config = _config(settings, tmp_path)
    result = CliRunner().invoke(status, ["--format", "json", "--config", str(config),
                                         str(folder)])
    assert result.exit_code == 0, result.output
    rows = {row["table"]: row for row in json.loads(result.output)}
    assert set(rows) == {TABLE, DIM}  # the table the pipeline's code reads is shown too
    row = rows[TABLE]
    assert isinstance(row, dict)
    return row


def _query(page: Page, sql: str) -> None:
    page.fill("#query-sql", sql)
    page.click("#query-run")


def _row(page: Page, field: str) -> Locator:
    return page.locator(f'tr[data-table="{TABLE}"] [data-field="{field}"]')


def _lag_text(row: dict[str, object], topic: str) -> str:
    """How the page writes the Kafka lag of a ``status --format json`` row."""
    lags = row["lag"]
    assert isinstance(lags, list)
    [lag] = lags
    assert lag["source"] == f"kafka:{topic}" and lag["unit"] == "messages"
    return f"kafka:{topic}: {int(lag['behind']):,} messages behind"


def _check_numbers(page: Page, expected: dict[str, object], topic: str, valid: int,
                   malformed: int) -> None:
    """The table row and the DAG show what ``icetide status --format json`` says."""
    assert expected["rows_total"] == valid and expected["dead_letters"] == malformed
    for field in ("rows_total", "rows_last_commit", "dead_letters"):
        expect(_row(page, field)).to_have_attribute("data-value", str(expected[field]))
    expect(_row(page, "lag")).to_have_text(_lag_text(expected, topic))
    expect(_row(page, "state")).to_contain_text(str(expected["state"]))
    expect(_row(page, "expectations")).to_contain_text(f"long_visit: {valid} failed")
    expect(page.locator('[data-layer="sources"] [data-node]')).to_have_text(f"kafka:{topic}")
    expect(page.locator(f'[data-layer="ODS"] [data-node="{TABLE}"]')).to_have_class(
        "node state-ok")
    expect(page.locator("#freshness-chart .main-svg").first).to_be_visible()


def _check_dead_letters(page: Page, malformed: int) -> None:
    """Dead letters in all, and the drill-down: reason, topic/partition/offset, raw value."""
    total = page.locator(f'tr[data-table="{TABLE}"] [data-total]')
    expect(total).to_have_attribute("data-total", str(malformed))
    page.click(f'tr[data-table="{TABLE}"] button[data-dlq]')
    letters = page.locator("#dlq-rows tr[data-dead-letter]")
    expect(letters).to_have_count(malformed, timeout=15_000)
    assert letters.first.locator('[data-field="error"]').inner_text().strip()
    assert letters.first.locator('[data-field="raw"]').inner_text().startswith("{")


def _check_query_box(page: Page, rows: int) -> None:
    """A result table and a bar chart; DML refused; bad SQL leaves the server serving."""
    _query(page, f"SELECT webpageId, count(*) AS n FROM {TABLE} GROUP BY webpageId "
                 "ORDER BY n DESC")
    expect(page.locator("#query-result tr[data-row]").first).to_be_visible(timeout=30_000)
    expect(page.locator("#query-chart .main-svg").first).to_be_visible()
    _query(page, f"DELETE FROM {TABLE}")
    expect(page.locator("#query-error")).to_contain_text("DELETE statements are refused")
    _query(page, "SELECT FROM WHERE")
    expect(page.locator("#query-error")).to_contain_text("syntax error")
    _query(page, f"SELECT count(*) AS n FROM {TABLE}")
    expect(page.locator("#query-result tr[data-row] td")).to_have_text(str(rows),
                                                                      timeout=30_000)


def _own_database(folder: Path) -> Path:
    """test_status's pipeline writes st_ods.*, in the same session lake: use web_ods."""
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".yml"):
            path.write_text(path.read_text().replace("st_ods", "web_ods"))
    return folder


@dataclass(frozen=True)
class Lake:
    """What the module's pipeline wrote: one batch of clicks, 30 more produced since."""

    folder: Path
    topic: str
    first: GenReport


@pytest.fixture(scope="module")
def lake(spark: SparkSession, icetide_settings: Settings, broker: str,
         tmp_path_factory: pytest.TempPathFactory) -> Lake:
    topic = create_topic(broker, None, 2)
    first = produce_clicks(broker, topic, GenOptions(count=200, bad_ratio=0.1, seed=21,
                                                     partitions=2))
    folder = _own_database(_pipeline(tmp_path_factory.mktemp("web"), broker, topic))
    (folder / "lookups.py").write_text(LOOKUP)
    _run_once(spark, icetide_settings, folder)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.web_dim")
    spark.sql(f"CREATE TABLE lake.{DIM} (productId bigint, name string) USING iceberg")
    spark.sql(f"INSERT INTO lake.{DIM} VALUES (1, 'tea')")
    produce_clicks(broker, topic, GenOptions(count=30, seed=22, partitions=2))
    return Lake(folder, topic, first)


def _check_refusals(page: Page) -> None:
    """/api/dead-letters of a table that is no dead-letter table: a message naming them."""
    answer = page.request.get(page.url.rstrip("/") + f"/api/dead-letters?table={TABLE}")
    assert answer.status == 400
    error = answer.json()["error"]
    # every dead-letter table of the lake is named (the suite's lake has others too)
    assert error.startswith(f"{TABLE} is not a dead-letter table; dead-letter tables: ")
    assert f"{TABLE}_dlq" in error.split(" (e.g.")[0]
    assert "(e.g. /api/dead-letters?table=" in error and not error.count("[")


def test_the_dashboard_shows_status_live_and_answers_queries(
        spark: SparkSession, icetide_settings: Settings, lake: Lake, tmp_path: Path,
        page: Page) -> None:
    topic, first, folder = lake.topic, lake.first, lake.folder
    ctx = Context(icetide_settings, folder)
    server = serve_in_background(ctx, "127.0.0.1", free_port(), WebOptions(refresh=0.5))
    script_errors: list[str] = []
    page.on("pageerror", lambda exc: script_errors.append(str(exc)))
    try:
        page.goto(server.url)
        expect(page.locator(f'tr[data-table="{TABLE}"]')).to_be_visible(timeout=30_000)
        expect(page.locator(f'tr[data-table="{DIM}"]')).to_be_visible()
        expect(page.locator(f'[data-layer="CDC dimensions"] [data-node="{DIM}"]')).to_be_visible()
        row = {r.table: r for r in ctx.status()}[TABLE]
        expected = _status_json(icetide_settings, folder, tmp_path)
        assert row.rows_total == expected["rows_total"]
        assert [lag.behind for lag in row.lag] == [30]
        _check_numbers(page, expected, topic, first.valid, first.malformed)
        # not running: judged by the freshness its data had when committed, and says so
        assert expected["activity"] == "stopped"
        expect(_row(page, "state")).to_contain_text(f"{expected['state']} when committed")
        expect(_row(page, "achieved_s")).to_contain_text("when committed")

        # another batch commits: the page shows it without a reload
        _run_once(spark, icetide_settings, folder)
        after = _status_json(icetide_settings, folder, tmp_path)
        assert after["rows_total"] == first.valid + 30
        assert _lag_text(after, topic).endswith(": 0 messages behind")
        expect(_row(page, "rows_total")).to_have_attribute(
            "data-value", str(after["rows_total"]), timeout=30_000)
        expect(_row(page, "lag")).to_have_text(_lag_text(after, topic))

        _check_dead_letters(page, first.malformed)
        _check_refusals(page)
        _check_query_box(page, first.valid + 30)
        page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
        assert (tmp_path / "dashboard.png").stat().st_size > 10_000
        assert script_errors == []
    finally:
        server.stop()


#: Every line a name wraps onto must start right after one of these (never mid-word).
_BREAKS_AFTER = ".: "
_LINE_STARTS = """(el) => {
  const text = el.textContent, starts = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let offset = 0, top = null;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i++) {
      const range = document.createRange();
      range.setStart(node, i); range.setEnd(node, i + 1);
      const rect = range.getClientRects()[0];
      if (rect && top !== null && rect.top > top + 2) starts.push(offset + i);
      if (rect) top = rect.top;
    }
    offset += node.data.length;
  }
  return [text, starts];
}"""


def _wraps_only_at_dots(locator: Locator) -> int:
    """How many of the elements wrap; fails on one that wraps inside a word."""
    wrapped = 0
    for i in range(locator.count()):
        text, starts = locator.nth(i).evaluate(_LINE_STARTS)
        assert all(text[s - 1] in _BREAKS_AFTER for s in starts), (text, starts)
        wrapped += bool(starts)
    return wrapped


def test_the_page_fits_a_laptop_screen_and_names_wrap_at_dots(
        icetide_settings: Settings, page: Page) -> None:
    """The demo's lake at 1360×1000: the table fits its section, every column (the
    source lag last) is on screen, and names break after a dot, not inside a word."""
    server = serve_in_background(Context(icetide_settings), "127.0.0.1", free_port(),
                                 WebOptions(refresh=60, lag=False))
    state = json.dumps(demo_state())
    page.route("**/events", lambda route: route.fulfill(
        status=200, headers={"content-type": "text/event-stream"},
        body=f"event: state\ndata: {state}\n\n"))
    page.set_viewport_size({"width": 1360, "height": 1000})
    try:
        page.goto(server.url)
        expect(page.locator('tr[data-table="ads.daily_product_report"]')).to_be_visible()
        table_width, room, page_width = page.evaluate(
            "() => [document.querySelector('#tables').scrollWidth,"
            " document.querySelector('#tables').parentElement.clientWidth,"
            " document.documentElement.scrollWidth]")
        assert table_width <= room and page_width <= 1360, (table_width, room, page_width)
        lag_header = page.locator("#tables th", has_text="source lag").bounding_box()
        assert lag_header is not None and lag_header["x"] + lag_header["width"] <= 1360
        names = page.locator("#tables td.name, #dag [data-node] > .name")
        assert names.count() == 11 + 12
        assert _wraps_only_at_dots(names) > 0  # some do wrap at this width, at their dots
        _wraps_only_at_dots(page.locator('#tables td[data-field="lag"]'))
        stopped = page.locator('tr[data-table="ads.daily_product_report"]')
        expect(stopped.locator('[data-field="state"]')).to_have_text(
            "ok when committed · stopped (caught up)")
        expect(stopped.locator('[data-field="achieved_s"]')).to_have_text("2.1s when committed")
    finally:
        server.stop()


def _serve(folder: Path, config: Path, port: int) -> subprocess.Popen[str]:
    """``icetide dashboard FOLDER`` in a process of its own, once it listens."""
    icetide = Path(sys.executable).with_name("icetide")
    proc = subprocess.Popen([str(icetide), "dashboard", str(folder), "--config", str(config),
                             "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not port_in_use(port, "127.0.0.1"):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    return proc


def test_with_the_broker_down_the_page_renders_at_once_and_ctrl_c_stops_cleanly(
        icetide_settings: Settings, lake: Lake, tmp_path: Path, page: Page) -> None:
    """Lag is fetched apart: the tables show at once, lag 'unavailable' until the source
    answers (here: its client gives up). Ctrl-C with the page open: a clean stop."""
    down = tmp_path / "down"
    down.mkdir()
    dead = f"127.0.0.1:{free_port()}"
    for path in lake.folder.glob("*.py"):
        (down / path.name).write_text(path.read_text())
    spec = (lake.folder / "icetide-pipeline.yml").read_text()
    (down / "icetide-pipeline.yml").write_text(spec.replace(
        spec.split("bootstrap: '")[1].split("'")[0], dead))
    port = free_port()
    proc = _serve(down, _config(icetide_settings, tmp_path), port)
    try:
        page.goto(f"http://127.0.0.1:{port}/")
        # the tables show while the lag is still being asked for (the Kafka client gives
        # up after 10 s): before, the page stayed empty until it had
        expect(_row(page, "rows_total")).to_be_visible(timeout=30_000)
        expect(_row(page, "lag")).to_have_text("unavailable (asking the sources…)")
        expect(page.locator(f'[data-layer="ODS"] [data-node="{TABLE}"]')).to_be_visible()
        expect(page.locator("#source-lag")).to_contain_text(
            f"kafka:{lake.topic}: unavailable (Kafka at {dead} unreachable", timeout=40_000)
        expect(_row(page, "lag")).to_have_text(f"kafka:{lake.topic}: unavailable")
        expect(page.locator("#connection")).to_have_text("live")
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert err.rstrip().endswith("dashboard stopped")
    for noise in ("Traceback", "Exception in ASGI application", "CancelledError",
                  "ASGI callable returned without completing response"):
        assert noise not in err, err
