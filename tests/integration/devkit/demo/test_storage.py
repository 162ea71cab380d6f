"""After ``icetide demo --storage s3`` the lake it built stays queryable: the commands the
demo prints at its end answer, though its S3 store (SeaweedFS) stopped with the demo.

The demo's end state is built cheaply here, as the demo builds it (``lake_storage``: the
store under ``$ICETIDE_HOME/s3-lake``, the lake's config written, the report table
created by ``icetide sql``), not by a 3-minute demo run; then the store stops and the
printed commands run as a user runs them (subprocesses of the CLI)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tests.metastores import stop_metastores_under

from icetide.cli.demo_cmd import query_hints
from icetide.config import Settings, load_settings
from icetide.devkit.demo.storage import BUCKET, demo_home, lake_config_path, lake_storage
from icetide.devkit.embedded.seaweed import EmbeddedS3
from icetide.runtime.local_server import free_port

pytestmark = pytest.mark.spark

#: the demo's report table, built on the lake as a command given its config builds it
BUILD = """
import sys
from pathlib import Path
from icetide.cli.options import settings_from
from icetide.runtime.session import get_spark
spark = get_spark(settings_from(Path(sys.argv[1])))
spark.sql("CREATE NAMESPACE IF NOT EXISTS ads")
spark.sql("CREATE TABLE ads.daily_product_report USING iceberg AS SELECT 'p7' product_id, "
          "42 views")
"""


def _icetide(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "icetide.cli", *args], env=env, text=True,
                          capture_output=True, timeout=600, check=False)


def _printed(lake: Settings) -> tuple[dict[str, str], list[str], list[str]]:
    """What the demo's last lines say to run: the exports, the query, the stop."""
    head, exports, query, _ = query_hints(lake)
    variables = dict(word.split("=", 1) for word in shlex.split(exports)[1:])
    stop = shlex.split(head.split("until `")[1].split("`")[0])
    return variables, shlex.split(query), stop


def test_the_s3_demo_lake_answers_the_printed_commands_after_the_demo(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICETIDE_", "AWS_"))}
    env.update(ICETIDE_HOME=str(tmp_path / "home"), ICETIDE_METASTORE__PORT=str(free_port()),
               ICETIDE_SPARK__MASTER="local[1]", ICETIDE_SPARK__DRIVER_MEMORY="1g")
    settings = load_settings(environ=env)
    store = EmbeddedS3(demo_home(settings, "s3").path("s3"), bucket=BUCKET)
    try:
        with lake_storage(demo_home(settings, "s3"), "s3") as lake:
            config = str(lake_config_path(lake))
            built = subprocess.run([sys.executable, "-c", BUILD, config], text=True,
                                   env={**env, "ICETIDE_HOME": str(lake.home)},
                                   capture_output=True, timeout=600, check=False)
            assert built.returncode == 0, built.stderr[-3000:]
        assert store.running() is None  # the demo's end: its store stopped

        exported, query, stop = _printed(lake)
        assert (query[:2], stop[:2]) == (["icetide", "sql"], ["icetide", "catalog"])
        env.update(exported)  # the shell after the printed export
        answered = _icetide(env, *query[1:])
        assert answered.returncode == 0, answered.stderr[-3000:]
        assert "p7" in answered.stdout and "42" in answered.stdout
        assert store.running() is not None  # started again, detached

        stopped = _icetide(env, *stop[1:])
        assert stopped.returncode == 0, stopped.stderr[-3000:]
        assert "stopped the S3 store" in stopped.stdout
        assert store.running() is None
    finally:
        store.stop_detached()
        stop_metastores_under(tmp_path)
