"""Fixtures of the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from icetide.config import MetastoreConfig, Settings
from icetide.devkit.embedded.process import free_port
from icetide.runtime.metastore.service import stop_metastore
from tests.e2e.demo_lake import DemoLake, run_demo
from tests.metastores import KEEP


@pytest.fixture(scope="session")
def demo_lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoLake]:
    """The demo's lake (tests.e2e.demo_lake), built once; its catalog service serves it
    until the session ends."""
    tmp = tmp_path_factory.mktemp("demo")
    port = free_port()
    KEEP.add(port)  # the per-test cleanup leaves this service running
    try:
        yield run_demo(tmp, port)
    finally:
        stop_metastore(Settings(home=tmp / "home", metastore=MetastoreConfig(port=port)))
        KEEP.discard(port)
