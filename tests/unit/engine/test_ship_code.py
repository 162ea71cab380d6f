"""Pipeline functions travel to executors by value (their modules are not importable there)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from icetide.engine.run import ship_pipeline_code
from icetide.pipelines import load_pipeline
from tests.unit.pipelines.test_loader import _seed


def test_loaded_functions_pickle_by_value(tmp_path: Path) -> None:
    import pyspark.cloudpickle

    cloudpickle: Any = pyspark.cloudpickle

    graph = load_pipeline(_seed(tmp_path))
    ship_pipeline_code(graph)  # the engine does this when it runs the pipeline
    func = graph.flows["ods_behavior.clickevent"].query
    assert func is not None
    payload = cloudpickle.dumps(func)
    module_name = func.__module__
    saved = sys.modules.pop(module_name)
    try:  # an executor cannot import the pipeline module: unpickling must not need it
        clone = cloudpickle.loads(payload)
    finally:
        sys.modules[module_name] = saved
    assert clone.__name__ == "clickevent"
