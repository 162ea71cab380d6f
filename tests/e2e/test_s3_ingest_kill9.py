"""Ingest onto a warehouse on S3 under kill -9: `icetide run examples/clickstream --flow
clickevent` against a real broker and a real S3-compatible store (SeaweedFS, loopback),
killed at random moments after a commit and restarted, then drained. Every produced
offset is in ODS or its dead-letter table exactly once — read back with pyiceberg from
the store, through the embedded metastore."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from icetide.config import load_settings
from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.devkit.embedded.process import free_port
from icetide.devkit.embedded.seaweed import EmbeddedS3
from icetide.devkit.gen.clicks import GenOptions, GenReport, produce_clicks
from icetide.runtime.catalogs import pyiceberg_catalog
from tests.e2e.pipeline_proc import BATCH_CAP, drain, kill9, start, wait_running
from tests.metastores import stop_metastores_under

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.slow,
              pytest.mark.timeout(1800)]  # a hang guard, not a budget

KILLS = 3
CLICKS = GenOptions(count=6_000, rate=150, bad_ratio=0.02, seed=11)  # ≈ 40 s of clicks


def _env(home: Path, bootstrap: str, s3_env: dict[str, str], endpoint: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICETIDE_", "AWS_"))}
    return {**env, **s3_env, "ICETIDE_HOME": str(home), "ICETIDE_KAFKA__BOOTSTRAP": bootstrap,
            "ICETIDE_CATALOG__WAREHOUSE": "s3://lake/k9", "ICETIDE_S3__ENDPOINT": endpoint,
            "ICETIDE_S3__PATH_STYLE_ACCESS": "true", "ICETIDE_METASTORE__PORT": str(free_port()),
            "ICETIDE_SPARK__MASTER": "local[2]", "ICETIDE_SPARK__DRIVER_MEMORY": "1g",
            "ICETIDE_SPARK__SHUFFLE_PARTITIONS": "2", BATCH_CAP: "1500"}


def _offsets(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[int, int]],
                                                                            int, int]:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    catalog = pyiceberg_catalog(load_settings())
    ods = catalog.load_table(("ods_behavior", "clickevent")).scan(
        selected_fields=("_kafka_partition", "_kafka_offset")).to_arrow()
    dlq = catalog.load_table(("ods_behavior", "clickevent_dlq")).scan(
        selected_fields=("partition", "offset")).to_arrow()
    seen = list(zip(ods.column(0).to_pylist(), ods.column(1).to_pylist(), strict=True))
    seen += zip(dlq.column(0).to_pylist(), dlq.column(1).to_pylist(), strict=True)
    return seen, ods.num_rows, dlq.num_rows


def test_ingest_on_s3_survives_kill9_exactly_once(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261127)
    with EmbeddedS3(tmp_path / "s3") as store, EmbeddedBroker(None, tmp_path / "b") as broker:
        env = _env(tmp_path / "home", broker.bootstrap, store.env(), store.endpoint)
        try:
            seeded = subprocess.run([sys.executable, "-m", "icetide.cli", "seed", "dims"],
                                    env=env, capture_output=True, text=True, timeout=600)
            assert seeded.returncode == 0, seeded.stderr[-3000:]
            report: list[GenReport] = []
            producer = threading.Thread(target=lambda: report.append(
                produce_clicks(broker.bootstrap, "clicktopic", CLICKS)))
            producer.start()
            kills = 0
            while kills < KILLS or producer.is_alive():
                log = tmp_path / f"run-{kills}.log"
                proc = start(env, log, "--flow", "clickevent", "--trigger-interval", "1")
                wait_running(proc, log)
                time.sleep(rng.uniform(0.0, 4.0))
                kill9(proc)
                kills += 1
                assert kills < 30
            producer.join()
            drain(env, "--flow", "clickevent")
            seen, valid, malformed = _offsets(env, monkeypatch)
        finally:
            stop_metastores_under(tmp_path)
    [clicks] = report
    assert len(seen) == len(set(seen)), "duplicated offsets"
    assert (valid, malformed) == (clicks.valid, clicks.malformed)
    by_partition: dict[int, list[int]] = {}
    for partition, offset in seen:
        by_partition.setdefault(partition, []).append(offset)
    for offsets in by_partition.values():  # contiguous from 0: nothing skipped
        assert sorted(offsets) == list(range(len(offsets)))
    assert len(seen) == clicks.valid + clicks.malformed
