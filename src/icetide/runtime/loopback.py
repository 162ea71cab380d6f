"""Whether an address stays on this machine: the check behind every server that has no
authentication of its own (the metastore, the local Trino, a password-less SQL server)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """``localhost``, ``127.0.0.0/8`` or ``::1``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
