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
from playwright.sync_api import Page, expect, sync_playwright
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
TABLE = "st_ods.clicks"


@pytest.fixture
def page() -> Iterator[Page]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} missing: scripts/install.sh --test installs chromium")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 1100})
        finally:
            browser.close()


def _run_once(spark: SparkSession, settings: Settings, folder: Path) -> None:
    with PipelineRun(spark, settings, load_pipeline(folder)) as run:
        run.run_once()


def _cell(page: Page, field: str) -> str:
    return page.locator(f'tr[data-table="{TABLE}"] td[data-field="{field}"]')\
        .get_attribute("data-value") or ""


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


def test_the_dashboard_shows_status_live_and_answers_queries(
        spark: SparkSession, icetide_settings: Settings, broker: str,
        kafka_topic: Callable[..., str], tmp_path: Path, page: Page) -> None:
    topic = kafka_topic(partitions=2)
    first = produce_clicks(broker, topic, GenOptions(count=200, bad_ratio=0.1, seed=21,
                                                     partitions=2))
    folder = _pipeline(tmp_path, broker, topic)
    _run_once(spark, icetide_settings, folder)
    produce_clicks(broker, topic, GenOptions(count=30, seed=22, partitions=2))

    ctx = Context(icetide_settings, folder)
    server = serve_in_background(ctx, "127.0.0.1", free_port(), WebOptions(refresh=0.5))
    try:
        page.goto(server.url)
        expect(page.locator(f'tr[data-table="{TABLE}"]')).to_be_visible(timeout=30_000)
        expected = _status_json(icetide_settings, folder, tmp_path)
        [row] = ctx.status()
        assert row.rows_total == expected["rows_total"] == first.valid
        assert _cell(page, "rows_total") == str(expected["rows_total"])
        assert _cell(page, "rows_last_commit") == str(expected["rows_last_commit"])
        assert _cell(page, "dead_letters") == str(expected["dead_letters"]) == str(first.malformed)
        lag_cell = page.locator(f'tr[data-table="{TABLE}"] td[data-field="lag"]')
        expect(lag_cell).to_have_text(f"kafka:{topic}: 30 messages behind")
        expect(page.locator(f'tr[data-table="{TABLE}"] td[data-field="state"]'))\
            .to_contain_text(str(expected["state"]))
        expect(page.locator(f'tr[data-table="{TABLE}"] td[data-field="expectations"]'))\
            .to_contain_text(f"long_visit: {first.valid} failed")
        expect(page.locator('[data-layer="sources"] [data-node]')).to_have_text(f"kafka:{topic}")
        expect(page.locator(f'[data-layer="ODS"] [data-node="{TABLE}"]')).to_have_class(
            "node state-ok")
        expect(page.locator("#freshness-chart .main-svg").first).to_be_visible()

        # another batch commits: the page shows it without a reload
        _run_once(spark, icetide_settings, folder)
        rows_cell = page.locator(f'tr[data-table="{TABLE}"] td[data-field="rows_total"]')
        expect(rows_cell).to_have_attribute("data-value", str(first.valid + 30), timeout=30_000)
        expect(lag_cell).to_have_text(f"kafka:{topic}: 0 messages behind")
        assert _status_json(icetide_settings, folder, tmp_path)["rows_total"] == first.valid + 30

        total = page.locator(f'tr[data-table="{TABLE}"] [data-total]')
        expect(total).to_have_attribute("data-total", str(first.malformed))
        # dead letters drill down: reason, topic/partition/offset, raw value
        page.click(f'tr[data-table="{TABLE}"] button[data-dlq]')
        letters = page.locator("#dlq-rows tr[data-dead-letter]")
        expect(letters).to_have_count(first.malformed, timeout=15_000)
        assert letters.first.locator('[data-field="error"]').inner_text().strip()
        assert letters.first.locator('[data-field="raw"]').inner_text().startswith("{")

        # the query box: a result table and a bar chart; DML refused; bad SQL survives
        _query(page, f"SELECT webpageId, count(*) AS n FROM {TABLE} GROUP BY webpageId "
                     "ORDER BY n DESC")
        expect(page.locator("#query-result tr[data-row]").first).to_be_visible(timeout=30_000)
        expect(page.locator("#query-chart .main-svg").first).to_be_visible()
        _query(page, f"DELETE FROM {TABLE}")
        expect(page.locator("#query-error")).to_contain_text("DELETE statements are refused")
        _query(page, "SELECT FROM WHERE")
        expect(page.locator("#query-error")).to_contain_text("syntax error")
        _query(page, f"SELECT count(*) AS n FROM {TABLE}")
        expect(page.locator("#query-result tr[data-row] td")).to_have_text(
            str(first.valid + 30), timeout=30_000)
        page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
        assert (tmp_path / "dashboard.png").stat().st_size > 10_000
    finally:
        server.stop()
