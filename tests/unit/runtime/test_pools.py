"""The FAIR pools' allocation file and the session conf that names it (no JVM)."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from icetide.config import Settings
from icetide.runtime.pools import FLOWS_POOL, MAINTENANCE_POOL, allocation_file
from icetide.runtime.session import spark_conf


def test_the_session_reads_the_pools_file(tmp_path: Path) -> None:
    pools = allocation_file(tmp_path / "cache")
    conf = spark_conf(Settings(home=tmp_path), [], pools=pools)
    assert conf["spark.scheduler.allocation.file"] == pools.as_uri()
    assert conf["spark.scheduler.mode"] == "FAIR"
    found = {p.get("name"): p for p in ElementTree.parse(pools).getroot().iter("pool")}
    assert int(found[FLOWS_POOL].findtext("minShare") or 0) >= 1 << 20
    assert found[FLOWS_POOL].findtext("schedulingMode") == "FAIR"
    assert found[MAINTENANCE_POOL].findtext("minShare") == "0"
    assert allocation_file(tmp_path / "cache") == pools  # unchanged: not rewritten
