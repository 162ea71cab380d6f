"""Files the code reads beside itself ship in the wheel: pyproject's package-data names
each one, and the log configurations are read from there."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from icetide.config import Settings
from icetide.runtime.metastore.site import MetastorePaths, write_conf
from icetide.runtime.session import _log4j_config

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src"


def _shipped(path: Path, package_data: dict[str, list[str]]) -> bool:
    """Whether a package-data pattern of ``path``'s package, or of a package above it,
    matches it."""
    for package in path.relative_to(SRC).parents:
        patterns = package_data.get(".".join(package.parts), [])
        inside = str(path.relative_to(SRC / package))
        if any(fnmatch.fnmatch(inside, pattern) for pattern in patterns):
            return True
    return False


def test_every_data_file_of_the_package_is_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = config["tool"]["setuptools"]["package-data"]
    data = [p for p in (SRC / "icetide").rglob("*") if p.is_file()
            and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert {p.name for p in data} >= {"jars.toml", "log4j2-spark.properties",
                                      "log4j2.properties"}
    assert [str(p) for p in data if not _shipped(p, package_data)] == []


def test_the_log_configurations_are_written_from_the_packaged_files(tmp_path: Path) -> None:
    spark = _log4j_config(tmp_path / "cache")
    assert "logger.windowexec.level = error" in spark.read_text()
    assert _log4j_config(tmp_path / "cache").read_text() == spark.read_text()
    paths = MetastorePaths(tmp_path / "metastore")
    write_conf(Settings(home=tmp_path), paths)
    assert "logger.thrift.level = off" in (paths.conf_dir / "log4j2.properties").read_text()
