"""Serving the dashboard with uvicorn: safe by default.

Loopback (127.0.0.1, ::1, localhost) needs nothing; any other host needs an access token
from ``ICETIDE_DASHBOARD__TOKEN`` (the ``dashboard.token`` setting, environment only),
else :func:`check_bind` refuses to start and names the variable.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import uvicorn
from sse_starlette.sse import AppStatus

from icetide.app.context import Context
from icetide.errors import ConfigError, NotReadyError
from icetide.runtime.retry import wait_until
from icetide.web.app import SHUTDOWN_GRACE_S, WebOptions, create_app

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
TOKEN_ENV = "ICETIDE_DASHBOARD__TOKEN"


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback ``host`` without an access token."""
    if host not in LOOPBACK_HOSTS and not token:
        raise ConfigError(
            f"the dashboard would listen on {host}, reachable from other machines, without "
            f"an access token: set {TOKEN_ENV} (e.g. export {TOKEN_ENV}=$(openssl rand "
            "-hex 16)) or listen on 127.0.0.1")


def options_for(ctx: Context, lag: bool = True) -> WebOptions:
    """The web options of ``ctx.settings.dashboard``."""
    cfg = ctx.settings.dashboard
    token = cfg.token.get_secret_value() if cfg.token is not None else None
    return WebOptions(refresh=cfg.refresh, query_max_rows=cfg.query_max_rows,
                      query_timeout=cfg.query_timeout, token=token or None, lag=lag)


def url_of(host: str, port: int) -> str:
    """The address to open in a browser."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/"


def make_server(ctx: Context, host: str, port: int, options: WebOptions) -> uvicorn.Server:
    """A uvicorn server for the dashboard of ``ctx`` (checked: see :func:`check_bind`)."""
    check_bind(host, options.token)
    config = uvicorn.Config(create_app(ctx, options), host=host, port=port,
                            log_level="warning", lifespan="off",
                            timeout_graceful_shutdown=int(SHUTDOWN_GRACE_S) + 1)
    return uvicorn.Server(config)


@dataclass
class BackgroundServer:
    """A dashboard served from a daemon thread (for ``icetide demo``)."""

    server: uvicorn.Server
    thread: threading.Thread
    url: str

    def stop(self) -> None:
        """Ask the server to exit (its event streams end cleanly) and wait for it."""
        AppStatus.should_exit = True  # what uvicorn's signal handler sets in the foreground
        try:
            self.server.should_exit = True
            self.thread.join(timeout=SHUTDOWN_GRACE_S + 3)
        finally:
            AppStatus.should_exit = False  # process-wide: a later server streams again


def serve_in_background(ctx: Context, host: str, port: int, options: WebOptions,
                        ready_timeout: float = 10.0) -> BackgroundServer:
    """Start the dashboard in a thread and wait until it listens."""
    server = make_server(ctx, host, port, options)
    thread = threading.Thread(target=server.run, name="icetide-dashboard", daemon=True)
    thread.start()
    refused = (f"the dashboard could not listen on {host}:{port}: pick another port with "
               "--dashboard-port")
    try:  # a server that cannot bind ends its thread
        wait_until(lambda: server.started or not thread.is_alive(), timeout=ready_timeout,
                   what=f"the dashboard on {host}:{port}", interval=0.05)
    except NotReadyError as exc:
        raise ConfigError(f"{refused} ({exc})") from exc
    if not server.started:
        raise ConfigError(refused)
    return BackgroundServer(server, thread, url_of(host, port))
