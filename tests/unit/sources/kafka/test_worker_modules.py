"""What a Python worker imports to read Kafka: the reader, not the driver side."""

from __future__ import annotations

import subprocess
import sys

import pytest

from icetide.config import KafkaConfig
from icetide.sources.kafka.source import KafkaSource


@pytest.mark.parametrize(("reader", "modules"), [
    ("python", ("icetide.sources.kafka.reader",)),
    ("jvm", ()),
])
def test_a_source_names_the_modules_its_tasks_import(reader: str, modules: tuple[str, ...]
                                                     ) -> None:
    source = KafkaSource("clicks", KafkaConfig(bootstrap="127.0.0.1:9"), reader=reader)  # type: ignore[arg-type]
    try:
        assert source.worker_modules == modules
    finally:
        source.close()


def test_the_task_side_import_leaves_the_pipeline_api_out() -> None:
    """A worker unpickling a SliceReader imports its module; the package on the way there
    must not pull in the pipeline API (its config models, SQL parser)."""
    probe = ("import sys, icetide.sources.kafka.reader; "
             "print(sorted(m for m in sys.modules if m.startswith(('icetide.pipelines', "
             "'icetide.config', 'sqlglot', 'pydantic'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_the_package_still_offers_its_names() -> None:
    import icetide.sources.kafka as kafka

    assert kafka.KafkaSource is KafkaSource
    assert callable(kafka.resolve_bootstrap) and callable(kafka.read)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = kafka.nope  # type: ignore[attr-defined]
