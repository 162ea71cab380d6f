"""The ``dashboard:`` settings become the web server's options (docs/options.md; what each
option does to the page: tests/unit/web/test_app.py, tests/unit/web/test_feeds.py)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from icetide.app.context import Context
from icetide.config import CatalogConfig, DashboardConfig, Settings
from icetide.web.serve import options_for


def test_refresh_query_limits_and_token_reach_the_server(tmp_path: Path) -> None:
    dashboard = DashboardConfig(refresh=5.0, query_timeout=3.0, query_max_rows=7,
                                token=SecretStr("s3cret"))
    ctx = Context(Settings(home=tmp_path, catalog=CatalogConfig(type="hadoop"),
                           dashboard=dashboard))
    options = options_for(ctx)
    assert (options.refresh, options.query_timeout, options.query_max_rows, options.token) == (
        5.0, 3.0, 7, "s3cret")
    plain = options_for(Context(Settings(home=tmp_path, catalog=CatalogConfig(type="hadoop"))))
    assert (plain.refresh, plain.query_timeout, plain.query_max_rows, plain.token) == (
        2.0, 10.0, 1000, None)
