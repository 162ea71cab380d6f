"""The executors' Python environment (``spark.python_env``, docs/deploy.md).

The Kafka reader and the JSON decoding run inside Spark tasks, so executors must import
icetide and its dependencies. ``archive`` follows PySpark's documented practice: a packed
virtualenv shipped with ``spark.archives`` (``<archive>#environment``) and
``PYSPARK_PYTHON=./environment/bin/python``. The archive is packed here rather than with
venv-pack (0.2.0 refuses editable installs — a development checkout is one — and packs
the whole venv: 1.5 GB with the dev tools): what goes in is the dependency closure of
icetide (plus ``packages``, minus the driver-only ``exclude``) read from the installed
distributions' RECORD files, and the icetide package the driver itself runs, copied from
its source directory. Like venv-pack, the interpreter is not packed: ``bin/python`` links
to the same Python path, which every node must have.

The archive is built once per package set (the key hashes every packed distribution's
name and version and icetide's source) and cached under ``<home>/pyenv/``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import logging
import os
import sys
import tarfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import icetide
from icetide.config import PythonEnvConfig, Settings
from icetide.errors import RuntimeSetupError

log = logging.getLogger(__name__)

#: The directory name executors unpack the archive into (``spark.archives`` ``#alias``).
ALIAS = "environment"
_SKIP_PARTS = frozenset({"__pycache__"})
#: Executors run the Spark of their worker: the wheel's jars stay out of the archive.
_SKIP_PREFIXES = ("pyspark/jars/", "pyspark/examples/", "pyspark/data/")


def executor_python(settings: Settings) -> tuple[str, dict[str, str]]:
    """``(PYSPARK_PYTHON, Spark conf)`` for the executors' Python workers."""
    env = settings.spark.python_env
    if env.mode == "path":
        assert env.python is not None  # the config validator requires it
        return env.python, {}
    if env.mode == "archive":
        archive = ensure_archive(settings)
        return f"./{ALIAS}/bin/python", {"spark.archives": f"{archive}#{ALIAS}"}
    return sys.executable, {}


def closure(env: PythonEnvConfig) -> list[md.Distribution]:
    """Installed distributions icetide (and ``env.packages``) need at run time, in name
    order, without ``env.exclude`` (nor what only they pull in)."""
    excluded = {canonicalize_name(n) for n in env.exclude}
    found: dict[str, md.Distribution] = {}
    todo: list[tuple[str, frozenset[str]]] = [("icetide", frozenset())]
    todo += [(Requirement(p).name, frozenset(Requirement(p).extras)) for p in env.packages]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if key in excluded or key in found:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            raise RuntimeSetupError(
                f"spark.python_env: distribution {name!r} is not installed in {sys.prefix}: "
                "install it or remove it from spark.python_env.packages") from None
        found[key] = dist
        todo += list(_requirements(dist, extras))
    return [found[k] for k in sorted(found)]


def _requirements(dist: md.Distribution, extras: frozenset[str]
                  ) -> Iterator[tuple[str, frozenset[str]]]:
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is None or any(req.marker.evaluate({"extra": e})
                                     for e in (extras or {""})):
            yield req.name, frozenset(req.extras)


def _package_files(dists: Iterable[md.Distribution]) -> Iterator[tuple[Path, str]]:
    """``(file, path in site-packages)`` of every packed distribution but icetide."""
    for dist in dists:
        if canonicalize_name(dist.metadata["Name"]) == "icetide":
            continue
        for rel in dist.files or []:
            name = rel.as_posix()
            if name.startswith("..") or _SKIP_PARTS & set(rel.parts):
                continue
            if name.startswith(_SKIP_PREFIXES):
                continue
            path = Path(str(dist.locate_file(rel)))
            if path.is_file():
                yield path, name


def _icetide_files() -> Iterator[tuple[Path, str]]:
    """The icetide package this process runs (an editable checkout included)."""
    root = Path(icetide.__file__).resolve().parent
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root.parent)
        if path.is_file() and not _SKIP_PARTS & set(rel.parts) and path.suffix != ".pyc":
            yield path, rel.as_posix()


def _key(dists: list[md.Distribution], own: list[tuple[Path, str]]) -> str:
    digest = hashlib.sha256(f"{sys.version}\n{sys.prefix}\n".encode())
    for dist in dists:
        digest.update(f"{dist.metadata['Name']}=={dist.version}\n".encode())
    for path, name in own:
        digest.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def ensure_archive(settings: Settings) -> Path:
    """The packed environment for ``settings`` (built on first use, then cached)."""
    if sys.prefix == sys.base_prefix:
        raise RuntimeSetupError(
            f"spark.python_env.mode 'archive' packs a virtualenv, but {sys.executable} runs "
            "none: run icetide from a venv (scripts/install.sh makes .venv) or use mode 'path'")
    dists = closure(settings.spark.python_env)
    own = list(_icetide_files())
    target = settings.path("pyenv", f"executor-env-{_key(dists, own)}.tar.gz")
    if target.is_file():
        log.info("executor Python environment: %s (cached)", target)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    log.info("packing the executors' Python environment: %d distributions + icetide → %s",
             len(dists), target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        _write(tmp, [*_package_files(dists), *own])
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    log.info("packed %.0f MB in %.1fs", target.stat().st_size / 1e6,
             time.perf_counter() - started)
    return target


def _write(tmp: Path, files: list[tuple[Path, str]]) -> None:
    """The venv skeleton (``pyvenv.cfg``, ``bin/python*`` links) and ``files`` under
    ``lib/pythonX.Y/site-packages``."""
    site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    prefix = Path(sys.prefix)
    with tarfile.open(tmp, "w:gz", compresslevel=1) as tar:
        tar.add(prefix / "pyvenv.cfg", "pyvenv.cfg")
        for exe in sorted((prefix / "bin").glob("python*")):
            tar.add(exe, f"bin/{exe.name}", recursive=False)  # symlinks stay links
        for i, (path, name) in enumerate(files, 1):
            tar.add(path, f"{site}/{name}", recursive=False)
            if i % 5000 == 0:
                log.info("packed %d of %d files", i, len(files))
