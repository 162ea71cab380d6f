"""The docs name what the code has: the pinned Iceberg version, files that exist."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "icetide"
#: benchmarks-history.md records past runs as they were: not checked
TEXTS = [p for p in (ROOT / "docs").glob("*.md") if p.name != "benchmarks-history.md"]
TEXTS += [ROOT / "README.md", *SRC.rglob("*.py")]


def _pinned_iceberg() -> str:
    jars = tomllib.loads((SRC / "runtime" / "jars.toml").read_text())
    coordinate: str = jars["groups"]["iceberg"]["coordinates"][0]
    return coordinate.rsplit(":", 1)[1]


def test_the_iceberg_version_named_is_the_pinned_one() -> None:
    pinned = _pinned_iceberg()
    minor = ".".join(pinned.split(".")[:2])
    stale = []
    for path in TEXTS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "flink" in line.lower():  # Flink's Iceberg runtime has versions of its own
                continue
            for version in re.findall(r"Iceberg (\d+\.\d+(?:\.\d+)?)", line):
                if version not in (pinned, minor):
                    stale.append(f"{path.relative_to(ROOT)}:{number}: Iceberg {version}")
    assert not stale, f"Iceberg {pinned} is pinned (runtime/jars.toml): {stale}"


_PATH = re.compile(r"`((?:src/icetide/|tests/|scripts/)?[a-z_]+(?:/[a-z_0-9]+)*/[a-z_0-9]+\.py)`")


def test_every_file_the_docs_name_exists() -> None:
    """A name is a path from the repository, from src/icetide, or the tail of one
    (``demo/shop.py``); what docs/stack.md lists as no longer true may name removed files."""
    files = {str(p.relative_to(ROOT)) for p in ROOT.glob("[!.]*/**/*.py")}
    missing = []
    for path in (ROOT / "docs").glob("*.md"):
        text = path.read_text().split("## No longer true")[0]
        for name in _PATH.findall(text):
            if not any(f == name or f.endswith("/" + name) for f in files):
                missing.append(f"{path.name}: {name}")
    assert not missing, f"the docs name files that do not exist: {missing}"
