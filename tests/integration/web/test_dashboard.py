"""The dashboard in a real browser (Debian chromium) over tables a real Kafka flow wrote:
the numbers equal ``icetide status --format json``, they update live when another batch
commits, the query box answers, refuses DML and survives bad SQL, dead letters drill down."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from playwright.sync_api import Locator, Page, expect, sync_playwright
from pyspark.sql import SparkSession

from icetide.app.context import Context
from icetide.cli.status_cmd import status
from icetide.config import Settings
from icetide.devkit.embedded.process import free_port
from icetide.devkit.gen.clicks import GenOptions, produce_clicks
from icetide.engine.run import PipelineRun
from icetide.pipelines import load_pipeline
from icetide.web.app import WebOptions
from icetide.web.serve import serve_in_background
from tests.integration.app.test_status import _pipeline

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
TABLE = "web_ods.clicks"  # test_status's pipeline in a database of its own


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


def _status_json(settings: Settings, folder: Path, tmp_path: Path) -> dict[str, object]:
    config = tmp_path / "icetide.yaml"
    config.write_text(yaml.safe_dump(settings.model_dump(mode="json", exclude_none=True)))
    result = CliRunner().invoke(status, ["--format", "json", "--config", str(config),
                                         str(folder)])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.output)
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


def test_the_dashboard_shows_status_live_and_answers_queries(
        spark: SparkSession, icetide_settings: Settings, broker: str,
        kafka_topic: Callable[..., str], tmp_path: Path, page: Page) -> None:
    topic = kafka_topic(partitions=2)
    first = produce_clicks(broker, topic, GenOptions(count=200, bad_ratio=0.1, seed=21,
                                                     partitions=2))
    folder = _own_database(_pipeline(tmp_path, broker, topic))
    _run_once(spark, icetide_settings, folder)
    produce_clicks(broker, topic, GenOptions(count=30, seed=22, partitions=2))

    ctx = Context(icetide_settings, folder)
    server = serve_in_background(ctx, "127.0.0.1", free_port(), WebOptions(refresh=0.5))
    script_errors: list[str] = []
    page.on("pageerror", lambda exc: script_errors.append(str(exc)))
    try:
        page.goto(server.url)
        expect(page.locator(f'tr[data-table="{TABLE}"]')).to_be_visible(timeout=30_000)
        [row] = ctx.status()
        expected = _status_json(icetide_settings, folder, tmp_path)
        assert row.rows_total == expected["rows_total"]
        assert [lag.behind for lag in row.lag] == [30]
        _check_numbers(page, expected, topic, first.valid, first.malformed)

        # another batch commits: the page shows it without a reload
        _run_once(spark, icetide_settings, folder)
        after = _status_json(icetide_settings, folder, tmp_path)
        assert after["rows_total"] == first.valid + 30
        assert _lag_text(after, topic).endswith(": 0 messages behind")
        expect(_row(page, "rows_total")).to_have_attribute(
            "data-value", str(after["rows_total"]), timeout=30_000)
        expect(_row(page, "lag")).to_have_text(_lag_text(after, topic))

        _check_dead_letters(page, first.malformed)
        _check_query_box(page, first.valid + 30)
        page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
        assert (tmp_path / "dashboard.png").stat().st_size > 10_000
        assert script_errors == []
    finally:
        server.stop()
