"""Remember which Java names py4j resolved, so a name is looked up in the JVM once.

Every ``spark._jvm.org.apache.iceberg.spark.Spark3Util`` (and every ``F.col``: pyspark
resolves ``jvm.functions`` on each call) is a py4j round trip per dotted part, and the
JVM answers each with ``Class.forName``. A part that is *not* a class (``org``,
``org.apache``; a short name tried against each of pyspark's wildcard imports) misses:
the class loader then searches every jar on the class path (~250 in pyspark's
``jars/``) and builds a ``ClassNotFoundException``: a visible share of the driver JVM's
CPU in a profile of a running pipeline.

What a name resolves to never changes while a gateway lives (a class or a package; a
static method of a loaded class), so :func:`install` memoizes those answers per gateway
client. Failed look-ups, static *fields* (their value may change) and instance members
are not remembered.

It patches py4j's internals (``__getattr__`` of ``JVMView``, ``JavaPackage`` and
``JavaClass``), so it is tested against one py4j: :data:`TESTED_PY4J`, pinned in
pyproject.toml; with any other version installed nothing is patched (a warning says so).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from importlib.metadata import version
from typing import TypeAlias

from py4j import java_gateway as gw

log = logging.getLogger(__name__)

#: The py4j whose internals :func:`install` patches (tests/integration/runtime/test_py4j_memo.py).
TESTED_PY4J = "0.10.9.9"

_installed = False
_lock = threading.Lock()
_MEMO_ATTR = "_icetide_names"

#: What the patched look-ups run on: the JVM view, a package, a class.
Node: TypeAlias = "gw.JVMView | gw.JavaPackage | gw.JavaClass"
Getattr = Callable[[Node, str], object]


def _memo(client: object) -> dict[tuple[str, str, str], object]:
    memo: dict[tuple[str, str, str], object] | None = getattr(client, _MEMO_ATTR, None)
    if memo is None:
        memo = {}
        setattr(client, _MEMO_ATTR, memo)
    return memo


def _remembered(kind: str, scope: Callable[[Node], str], original: Getattr,
                keep: Callable[[object], bool]) -> Getattr:
    """``original`` (a ``__getattr__``) answering repeated names from the memo."""

    def lookup(self: Node, name: str) -> object:
        memo = _memo(self._gateway_client)
        key = (kind, scope(self), name)
        found = memo.get(key)
        if found is None:
            found = original(self, name)
            if keep(found):
                memo[key] = found
        return found

    return lookup


def _class_or_package(value: object) -> bool:
    return isinstance(value, (gw.JavaClass, gw.JavaPackage))


def _method_or_class(value: object) -> bool:
    return isinstance(value, (gw.JavaClass, gw.JavaMember))


def install() -> None:
    """Memoize py4j's name look-ups in this process (idempotent; only on :data:`TESTED_PY4J`)."""
    global _installed
    with _lock:
        if _installed:
            return
        if version("py4j") != TESTED_PY4J:
            log.warning("py4j %s is not the tested %s: its name look-ups are not memoized",
                        version("py4j"), TESTED_PY4J)
            _installed = True
            return
        gw.JVMView.__getattr__ = _remembered(
            "view", lambda v: str(v._id), gw.JVMView.__getattr__, _class_or_package)
        gw.JavaPackage.__getattr__ = _remembered(
            "package", lambda p: f"{p._jvm_id}:{p._fqn}", gw.JavaPackage.__getattr__,
            _class_or_package)
        gw.JavaClass.__getattr__ = _remembered(
            "class", lambda c: str(c._fqn), gw.JavaClass.__getattr__, _method_or_class)
        _installed = True
