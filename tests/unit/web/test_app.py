"""The dashboard app over an empty lake: routes, the read-only query box, the token."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from icetide.app.context import Context
from icetide.config import CatalogConfig, Settings
from icetide.errors import ConfigError
from icetide.web.app import WebOptions, create_app
from icetide.web.serve import TOKEN_ENV, check_bind, url_of


@pytest.fixture
def ctx(tmp_path: Path) -> Context:
    return Context(Settings(home=tmp_path, catalog=CatalogConfig(name="lake", type="hadoop")))


def test_the_page_its_assets_and_the_state_are_served(ctx: Context) -> None:
    client = TestClient(create_app(ctx, WebOptions(lag=False)))
    page = client.get("/")
    assert page.status_code == 200 and 'src="/vendor/plotly.min.js"' in page.text
    assert "EventSource" in client.get("/static/dashboard.js").text
    bundle = client.get("/vendor/plotly.min.js")
    assert bundle.status_code == 200 and len(bundle.content) > 1_000_000
    state = client.get("/api/state").json()
    assert state["status"] == [] and state["dag"]["layers"] == []


def test_the_query_box_runs_queries_and_refuses_everything_else(ctx: Context) -> None:
    client = TestClient(create_app(ctx, WebOptions(query_max_rows=3)))
    ok = client.post("/api/query", json={"sql": "SELECT range AS n FROM range(10)"})
    assert ok.status_code == 200
    assert ok.json()["rows"] == [[0], [1], [2]] and ok.json()["truncated"] is True
    for sql, word in [("INSERT INTO t VALUES (1)", "INSERT"), ("CALL pragma_version()", "CALL"),
                      ("drop table x", "DROP"), ("COPY (SELECT 1) TO '/tmp/x.csv'", "COPY")]:
        refused = client.post("/api/query", json={"sql": sql})
        assert refused.status_code == 400 and word in refused.json()["error"]
        assert "read-only" in refused.json()["error"] or "only queries" in refused.json()["error"]
    two = client.post("/api/query", json={"sql": "SELECT 1; DELETE FROM t"})
    assert two.status_code == 400 and "exactly one" in two.json()["error"]
    bad = client.post("/api/query", json={"sql": "SELECT nope FROM"})
    assert bad.status_code == 400 and "syntax error" in bad.json()["error"].lower()
    assert client.post("/api/query", json={"sql": "SELECT 42"}).json()["rows"] == [[42]]
    not_json = client.post("/api/query", content=b"SELECT 1")
    assert not_json.status_code == 400 and '"sql"' in not_json.json()["error"]
    odd_limit = client.post("/api/query", json={"sql": "SELECT 1", "limit": "many"})
    assert odd_limit.json()["limit"] == 3


def test_a_slow_query_is_stopped_at_the_time_limit(ctx: Context) -> None:
    client = TestClient(create_app(ctx, WebOptions(query_timeout=0.5)))
    slow = client.post("/api/query", json={
        "sql": "SELECT count(*) FROM range(100000000000) a WHERE a.range % 7 = 3"})
    assert slow.status_code == 400 and "longer than 0.5s" in slow.json()["error"]


def test_dead_letters_of_a_table_name_that_is_not_one_are_refused(ctx: Context) -> None:
    client = TestClient(create_app(ctx))
    bad = client.get("/api/dead-letters", params={"table": "x; DROP TABLE y"})
    assert bad.status_code == 400 and "not a name like" in bad.json()["error"]


def test_with_a_token_every_request_needs_it(ctx: Context) -> None:
    client = TestClient(create_app(ctx, WebOptions(token="s3cret", lag=False)))
    assert client.get("/api/state").status_code == 401
    assert client.get("/api/state", headers={"authorization": "Bearer s3cret"}).status_code == 200
    page = client.get("/", params={"token": "s3cret"})
    assert page.status_code == 200 and "icetide_dashboard_token" in page.headers["set-cookie"]
    assert client.get("/api/state").status_code == 200  # the cookie now carries it


def test_listening_beyond_loopback_needs_the_token_variable() -> None:
    check_bind("127.0.0.1", None)
    with pytest.raises(ConfigError, match=TOKEN_ENV):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", "s3cret")
    assert url_of("0.0.0.0", 8765) == "http://127.0.0.1:8765/"


def test_a_pipeline_that_cannot_be_loaded_is_shown_and_the_server_goes_on(
        tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    ctx = Context(Settings(home=tmp_path, catalog=CatalogConfig(name="lake", type="hadoop")),
                  broken)
    client = TestClient(create_app(ctx, WebOptions(lag=False)))
    state = client.get("/api/state").json()
    assert "broken" in state["error"] and "status" not in state
    assert client.post("/api/query", json={"sql": "SELECT 1"}).json()["rows"] == [[1]]
