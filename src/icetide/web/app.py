"""The dashboard's web adapter: a Starlette app over :class:`icetide.app.context.Context`.

Routes: ``/`` the page (``static/index.html``), ``/static/*`` its script and style,
``/vendor/plotly.min.js`` plotly's bundle from the installed ``plotly`` package,
``/events`` the page's data as server-sent events, ``/api/state`` the same once,
``/api/dead-letters`` recent dead letters of one table, ``/api/query`` the read-only
query box. Every number comes from the app layer; this module only serializes.
"""

from __future__ import annotations

import datetime as dt
import decimal
import importlib.util
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio
import anyio.to_thread
import duckdb
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from icetide.app.context import Context
from icetide.errors import IcetideError
from icetide.web.feeds import StateFeed

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
TOKEN_COOKIE = "icetide_dashboard_token"
#: Seconds an event stream has to end by itself once the server stops (then it is cut).
SHUTDOWN_GRACE_S = 2.0


@dataclass(frozen=True)
class WebOptions:
    """How the app serves: refresh period, query-box limits, the access token (if any)."""

    refresh: float = 2.0
    query_max_rows: int = 1000
    query_timeout: float = 10.0
    token: str | None = None
    lag: bool = True


def plotly_bundle() -> Path:
    """``plotly.min.js`` of the installed ``plotly`` package."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or spec.origin is None:
        raise IcetideError("the dashboard needs the plotly package: pip install 'plotly>=5.24'")
    path = Path(spec.origin).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise IcetideError(f"{path} is missing: reinstall plotly (pip install -U plotly)")
    return path


def jsonable(value: object) -> object:
    """A query value as JSON: bytes as text, dates ISO, decimals as numbers."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _authorized(request: Request, token: str) -> bool:
    given = (request.query_params.get("token") or request.cookies.get(TOKEN_COOKIE)
             or request.headers.get("authorization", "").removeprefix("Bearer ").strip())
    return bool(given) and secrets.compare_digest(given, token)


class TokenMiddleware(BaseHTTPMiddleware):
    """Every request carries the token (``?token=``, the cookie, or a Bearer header);
    a page opened with ``?token=`` sets the cookie so its script and events carry it."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request,
                       call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if not _authorized(request, self.token):
            return JSONResponse({"error": "access token missing or wrong: open the page as "
                                          "/?token=<ICETIDE_DASHBOARD__TOKEN>"}, 401)
        response = await call_next(request)
        if request.query_params.get("token"):
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
        return response


async def _json_body(request: Request) -> dict[str, object] | None:
    """The request's JSON object, or ``None`` when it is not one."""
    try:
        body = await request.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _routes(ctx: Context, options: WebOptions, feed: StateFeed) -> list[Route | Mount]:
    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    async def plotly(request: Request) -> Response:
        return FileResponse(plotly_bundle(), media_type="text/javascript")

    async def state(request: Request) -> Response:
        return Response(await feed.get(), media_type="application/json")

    async def events(request: Request) -> Response:
        return _event_stream(feed, options.refresh)

    async def dead_letters(request: Request) -> Response:
        table = request.query_params.get("table", "")
        limit = _bounded(request.query_params.get("limit"), 20, 200)
        return await _answer(lambda: {"table": table, "rows": [
            asdict(d) for d in ctx.dead_letters(table, limit)]})

    async def query(request: Request) -> Response:
        body = await _json_body(request)
        if body is None:
            return JSONResponse({"error": 'send JSON like {"sql": "SELECT 1", "limit": 100}'},
                                400)
        sql = str(body.get("sql", ""))
        limit = _bounded(body.get("limit"), options.query_max_rows, options.query_max_rows)
        return await _answer(lambda: _query_json(ctx, sql, limit, options.query_timeout))

    return [Route("/", index), Route("/vendor/plotly.min.js", plotly),
            Route("/api/state", state), Route("/events", events),
            Route("/api/dead-letters", dead_letters), Route("/api/query", query,
                                                            methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static")]


def _event_stream(feed: StateFeed, refresh: float) -> EventSourceResponse:
    """The page's data every ``refresh`` seconds; it ends (a complete response) when the
    server stops, so Ctrl-C with pages open is a clean stop."""
    shutdown = anyio.Event()  # set by sse-starlette when the server is asked to exit

    async def stream() -> AsyncIterator[dict[str, str]]:
        while not shutdown.is_set():
            yield {"event": "state", "data": await feed.get()}
            with anyio.move_on_after(refresh):
                await shutdown.wait()

    return EventSourceResponse(stream(), ping=15, shutdown_event=shutdown,
                               shutdown_grace_period=SHUTDOWN_GRACE_S)


def _bounded(value: object, default: int, most: int) -> int:
    """A row limit from a request: ``default`` when missing or not a number, 1..``most``."""
    try:
        number = int(str(value)) if value not in (None, "") else default
    except ValueError:
        number = default
    return max(1, min(number, most))


def _query_json(ctx: Context, sql: str, limit: int, timeout: float) -> dict[str, object]:
    started = time.perf_counter()
    result = ctx.read_only_sql(sql, limit=limit, timeout=timeout)
    return {"columns": result.columns, "truncated": result.truncated, "limit": limit,
            "seconds": round(time.perf_counter() - started, 3),
            "rows": [[jsonable(v) for v in row] for row in result.rows]}


async def _answer(work: Callable[[], dict[str, object]]) -> Response:
    """Run ``work`` in a thread; an icetide or SQL error is a 400 with its message."""
    try:
        data = await anyio.to_thread.run_sync(work)
    except (IcetideError, duckdb.Error) as exc:
        log.info("dashboard request refused: %s", exc)
        return JSONResponse({"error": str(exc).strip()}, 400)
    return Response(json.dumps(data, default=jsonable), media_type="application/json")


def create_app(ctx: Context, options: WebOptions | None = None) -> Starlette:
    """The dashboard app for ``ctx``; with ``options.token`` every request needs it."""
    opts = options or WebOptions()
    feed = StateFeed(ctx, opts.refresh, opts.lag)
    middleware = [Middleware(TokenMiddleware, token=opts.token)] if opts.token else []
    return Starlette(routes=_routes(ctx, opts, feed), middleware=middleware)
