"""Run the peer's Flink SQL job (``sql.job_spec``) in PyFlink's own venv.

``<flink venv>/bin/python job.py SPEC.json``: a local Flink (PyFlink's mini cluster, in the
JVM PyFlink starts) runs the statements of the spec; the last one, the ``INSERT``, is the
streaming job, which runs until this process is stopped. It imports PyFlink and the
standard library only: icetide is not installed in that venv (PyFlink pins py4j 0.10.9.7,
icetide 0.10.9.9).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(spec_path: str) -> None:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    spec = json.loads(Path(spec_path).read_text())
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    for key, value in spec["config"].items():
        config.set(key, value)
    config.set("pipeline.jars", ";".join(Path(j).as_uri() for j in spec["jars"]))
    *setup, insert = spec["statements"]
    for statement in setup:
        env.execute_sql(statement)
    result = env.execute_sql(insert)
    print("flink job submitted", flush=True)
    result.wait()


if __name__ == "__main__":
    main(sys.argv[1])
