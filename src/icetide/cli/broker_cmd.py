"""``icetide broker start``: run the embedded Kafka-protocol broker in the foreground."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from icetide.cli.options import config_option, settings_from


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGINT (even if inherited as ignored), SIGTERM and SIGHUP all stop the broker."""
    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous = {sig: signal.signal(sig, interrupt)
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


_READY = {
    "tansu": ("Kafka-protocol broker (Tansu)", "data is kept in memory only"),
    "kafka": ("Apache Kafka (KRaft)", "data is kept in {dir} across restarts"),
}


@click.group()
def broker() -> None:
    """The embedded Kafka broker: Tansu (in memory, the default) or Apache Kafka."""


@broker.command("start")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Port on 127.0.0.1 (default: kafka.embedded_port, 9092).")
@click.option("--kind", type=click.Choice(["tansu", "kafka"]), default=None,
              help="tansu (in memory) or kafka (Apache Kafka, log dirs kept) "
                   "(default: kafka.embedded, tansu).")
@config_option
def start(port: int | None, kind: str | None, config_path: Path | None) -> None:
    """Run the broker until Ctrl-C. With Tansu, topics and messages are lost when it stops."""
    from icetide.devkit.embedded.kinds import embedded_broker
    from icetide.errors import RuntimeSetupError

    settings = settings_from(config_path)
    kind = kind or settings.kafka.embedded
    embedded = embedded_broker(kind, settings.path("broker"),
                               port or settings.kafka.embedded_port)
    embedded.start()
    name, kept = _READY[kind]
    click.echo(f"{name} ready; bootstrap: {embedded.bootstrap}")
    click.echo(f"{kept.format(dir=settings.path('broker'))}; log: {embedded.log_path}; "
               "Ctrl-C stops it")
    try:
        with _terminate_as_interrupt():
            code = embedded.wait()
    except KeyboardInterrupt:
        embedded.stop()
        click.echo("broker stopped")
        return
    finally:
        embedded.stop()  # never leave the broker behind (it runs in its own session)
    raise RuntimeSetupError(
        f"the broker on {embedded.bootstrap} exited with code {code}; see {embedded.log_path}"
    )
