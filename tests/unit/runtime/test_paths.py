"""runtime.paths.Below: a named path under an object's folder."""

from __future__ import annotations

from pathlib import Path

from icetide.runtime.metastore.site import MetastorePaths
from icetide.runtime.paths import Below


class _Home:
    log = Below("x.log")
    data = Below("data", root="base")

    def __init__(self, root: Path, base: Path) -> None:
        self.root = root
        self.base = base


def test_reads_below_the_named_folder_attribute(tmp_path: Path) -> None:
    home = _Home(tmp_path / "a", tmp_path / "b")
    assert home.log == tmp_path / "a" / "x.log"
    assert home.data == tmp_path / "b" / "data"
    home.root = tmp_path / "c"
    assert home.log == tmp_path / "c" / "x.log"  # follows the folder, not a copy of it


def test_metastore_files(tmp_path: Path) -> None:
    paths = MetastorePaths(tmp_path)
    assert (paths.state, paths.last_port, paths.lock) == (
        tmp_path / "service.json", tmp_path / "last-port", tmp_path / "start.lock")
