"""``icetide maintain`` of a pipeline with a Hudi table, in a session without Hudi: refused
before Spark starts, naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.app.context import Context
from icetide.config import CatalogConfig, Settings
from icetide.errors import ConfigError

FLOWS = '''
from icetide import pipelines as dp
from icetide.sources import mysql

dp.create_streaming_table("dim.users", primary_key=["id"], format="hudi")
dp.create_auto_cdc_flow(target="dim.users", source=mysql.binlog("shop", table="app.users"),
                        keys=["id"], sequence_by="_pos")
'''


def test_a_hudi_table_is_not_maintained_without_spark_hudi(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "icetide-pipeline.yml").write_text(
        "name: p\ncatalog: lake\ndatabase: dim\nsources:\n"
        "  shop: {type: mysql, host: 127.0.0.1, port: 3306, user: cdc, password_env: NOPE}\n")
    (folder / "flows.py").write_text(FLOWS)
    ctx = Context(Settings(home=tmp_path, catalog=CatalogConfig(type="hadoop")), folder)
    with pytest.raises(ConfigError, match=r"dim\.users is a Hudi table: its compaction, "
                                          r"cleaning and archival run on Spark with Hudi: set "
                                          r"spark\.hudi: true \(ICETIDE_SPARK__HUDI=true\)"):
        ctx.maintain()
    assert ctx._spark is None  # refused before a JVM started
