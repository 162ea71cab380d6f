"""The worker daemon's zip importer re-reads an archive only when it changed
(icetide.runtime.pydaemon)."""

from __future__ import annotations

import os
import sys
import zipfile
import zipimport
from pathlib import Path

import pytest

from icetide.runtime.pydaemon import ArchiveImporter, install


def _zip(path: Path, *modules: str) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for name in modules:
            z.writestr(f"{name}.py", f"NAME = {name!r}\n")
    return str(path)


def test_an_unchanged_archive_is_not_read_again(tmp_path: Path) -> None:
    importer = ArchiveImporter(_zip(tmp_path / "lib.zip", "alpha"))
    files = importer._files  # type: ignore[attr-defined]
    importer.invalidate_caches()
    assert importer._files is files  # type: ignore[attr-defined]
    assert importer.find_spec("alpha") is not None


def test_a_replaced_archive_is_read_again(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "lib.zip", "alpha")
    importer = ArchiveImporter(archive)
    _zip(tmp_path / "lib.zip", "alpha", "beta")
    os.utime(archive, ns=(1, 1))  # a new stamp even within the clock's resolution
    assert importer.find_spec("beta") is None
    importer.invalidate_caches()
    assert importer.find_spec("beta") is not None


def test_install_swaps_the_hook_and_the_cached_importers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _zip(tmp_path / "lib.zip", "gamma")
    monkeypatch.setattr(sys, "path_hooks", list(sys.path_hooks))
    monkeypatch.setattr(sys, "path_importer_cache",
                        {**sys.path_importer_cache, archive: zipimport.zipimporter(archive)})
    install()
    assert zipimport.zipimporter not in sys.path_hooks and ArchiveImporter in sys.path_hooks
    cached = sys.path_importer_cache[archive]
    assert type(cached) is ArchiveImporter and cached.find_spec("gamma") is not None
