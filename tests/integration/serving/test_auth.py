"""The password check is compiled once per home and cached (needs javac, no Spark)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from icetide.config import Settings
from icetide.serving.auth import AUTH_CLASS, authenticator_jar


def test_the_password_check_is_compiled_once_into_the_home_cache(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    jar = authenticator_jar(settings)
    assert jar.parent == tmp_path.resolve() / "cache" / "sql-server"
    with zipfile.ZipFile(jar) as zf:
        assert zf.namelist() == [AUTH_CLASS.replace(".", "/") + ".class"]
    stamp = jar.stat().st_mtime_ns
    assert authenticator_jar(settings) == jar and jar.stat().st_mtime_ns == stamp
    assert [p.name for p in jar.parent.iterdir()] == [jar.name]  # no build leftovers
