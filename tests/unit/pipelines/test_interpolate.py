"""``${VAR}`` in spec files, ``--conf`` overrides and ``dp.configuration``."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide import pipelines as dp
from icetide.errors import PipelineError
from icetide.pipelines.interpolate import interpolate

SPEC = """name: p
configuration:
  mode: ${MODE:-seed}
sources:
  shop: {type: mysql, host: "${HOST}", port: "${PORT:-3306}", user: "a$${literal}"}
"""
FLOWS = """
from icetide import pipelines as dp
from icetide.errors import PipelineError

if dp.configuration("mode") == "cdc":
    dp.create_streaming_table("db.t", primary_key=["k"])
if dp.configuration("missing", "fallback") != "fallback":
    raise PipelineError("default not used")
"""


def _pipeline(tmp_path: Path) -> Path:
    (tmp_path / "icetide-pipeline.yml").write_text(SPEC)
    (tmp_path / "flows.py").write_text(FLOWS)
    return tmp_path


def test_interpolate_values_defaults_and_escapes() -> None:
    data = {"a": "${X}-${Y:-d}", "b": ["$${X}", 3], "${X}": "key kept"}
    assert interpolate(data, {"X": "x"}, "f") == {"a": "x-d", "b": ["${X}", 3],
                                                  "${X}": "key kept"}


def test_unset_variable_names_itself_and_the_fix() -> None:
    with pytest.raises(PipelineError, match=r"HOST.*export HOST=.*\$\{HOST:-value\}"):
        interpolate({"h": "${HOST}"}, {}, "spec.yml")


def test_load_pipeline_interpolates_and_overrides(tmp_path: Path) -> None:
    folder = _pipeline(tmp_path)
    graph = dp.load_pipeline(folder, env={"HOST": "db1"})
    assert dict(graph.spec.sources["shop"]) == {"type": "mysql", "host": "db1",
                                                "port": "3306", "user": "a${literal}"}
    assert graph.spec.configuration["mode"] == "seed" and not graph.tables
    graph = dp.load_pipeline(folder, env={"HOST": "db1", "MODE": "cdc"})
    assert list(graph.tables) == ["db.t"]
    graph = dp.load_pipeline(folder, env={"HOST": "db1", "MODE": "cdc"},
                             configuration={"mode": "seed"})
    assert not graph.tables  # --conf wins over the file


def test_configuration_outside_a_load_is_an_error() -> None:
    with pytest.raises(PipelineError, match="configuration"):
        dp.configuration("mode")
