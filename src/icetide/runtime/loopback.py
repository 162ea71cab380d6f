"""Whether an address stays on this machine: the check behind every server that has no
authentication of its own (the metastore, the local Trino, a password-less SQL server)."""

from __future__ import annotations

import ipaddress

from icetide.errors import ConfigError


def is_loopback(host: str) -> bool:
    """``localhost``, ``127.0.0.0/8`` or ``::1``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_loopback(host: str, setting: str, server: str, elsewhere: str) -> None:
    """Refuse a non-loopback ``host`` (the value of ``setting``) for ``server``, which has
    no authentication of its own; ``elsewhere`` says how to reach it from other hosts."""
    if not is_loopback(host):
        raise ConfigError(
            f"{setting} {host!r} is not a loopback address: {server} has no authentication, "
            f"so it binds 127.0.0.1 only; {elsewhere}")
