from __future__ import annotations

from pathlib import Path

import pytest

from icetide.errors import PipelineError
from icetide.pipelines.specfile import find_spec_file, read_spec_file

FULL = """
name: clickstream
catalog: lake
database: ods_behavior
libraries:
  - glob:
      include: transformations/**
  - extra.py
configuration:
  batch.size: 4
  feature.enabled: true
  some.string: "x"
sources:
  clicks: {type: kafka, topic: clicktopic}
  shop: {type: mysql, database: user_db, include: [user_db.products]}
defaults:
  trigger_interval: 5s
  freshness: 1 minute
  freshness_warn: 30 seconds
"""


def _write(tmp_path: Path, text: str, name: str = "icetide-pipeline.yml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_full_spec(tmp_path: Path) -> None:
    spec = read_spec_file(_write(tmp_path, FULL))
    assert spec.name == "clickstream"
    assert (spec.catalog, spec.database) == ("lake", "ods_behavior")
    assert spec.libraries == ("transformations/**", "extra.py")
    assert dict(spec.configuration) == {
        "batch.size": "4", "feature.enabled": "true", "some.string": "x",
    }
    assert dict(spec.sources["clicks"]) == {"type": "kafka", "topic": "clicktopic"}
    assert spec.sources["shop"]["include"] == ["user_db.products"]
    assert (spec.defaults.trigger_interval, spec.defaults.freshness,
            spec.defaults.freshness_warn) == (5.0, 60.0, 30.0)
    assert spec.path == (tmp_path / "icetide-pipeline.yml").resolve()
    assert spec.root == tmp_path.resolve()


def test_minimal_spec_and_schema_alias(tmp_path: Path) -> None:
    spec = read_spec_file(_write(tmp_path, "name: p\nschema: ods\n"))
    assert spec.database == "ods"
    assert spec.libraries == () and dict(spec.configuration) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: p\nfreshnes: 1s\n", "unknown key 'freshnes'"),
        ("name: p\ndefaults: {trigger: 1s}\n", "defaults: unknown key 'trigger'"),
        ("name: p\nlibraries: [{glob: {include: a, exclude: b}}]\n", "unknown key 'exclude'"),
        ("name: p\nlibraries: [{file: a}]\n", r"libraries\[0\]"),
        ("name: p\nlibraries: a.py\n", "must be a list"),
        ("catalog: lake\n", "missing required key 'name'"),
        ("name: p\ndatabase: a\nschema: b\n", "same setting"),
        ("name: p\nsources: {clicks: {topic: t}}\n", "needs a 'type'"),
        ("name: p\nsources: {clicks: kafka}\n", "must be a mapping"),
        ("name: p\ndefaults: {freshness: 10s, freshness_warn: 20s}\n", "must be below"),
        ("name: p\ndefaults: {freshness: soon}\n", "defaults.freshness='soon'"),
        ("name: p\ndefaults: {maintenance: {intervall: 1m}}\n",
         r"defaults.maintenance: unknown key 'intervall'.*allowed: enabled, interval"),
        ("name: p\ndefaults: {maintenance: {orphan_age: 1 minute}}\n",
         r"defaults.maintenance: orphan_age='1 minute'.*greater than or equal to 3600"),
        ("name: p\ndefaults: {maintenance: 5m}\n", "defaults.maintenance must be a mapping"),
        ("name: p\nconfiguration: {a: [1]}\n", "must be a string"),
        ("name: p\nconfiguration: {spark.sql.shuffle.partitions: 4}\n",
         r"configuration 'spark.sql.shuffle.partitions' is not applied.*spark.conf"),
        ("name: p\ntables: [a]\n", "'tables' must map a table name or glob"),
        ("name: p\ntables: {a.b: 5s}\n", r"tables.a.b must be a mapping"),
        ("name: p\ntables: {a.b: {fresh: 5s}}\n", r"tables.a.b: unknown key 'fresh'"),
        ("name: p\ntables: {a.b: {freshness: soon}}\n", r"tables.a.b.freshness='soon'"),
        ("name: [p]\n", "'name' must be a string"),
        ("- a\n", "expected a mapping"),
        ("name: p\n  bad: : yaml\n", "not valid YAML"),
    ],
)
def test_spec_errors_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(PipelineError, match=message) as info:
        read_spec_file(path)
    assert str(path) in str(info.value)


def test_find_spec_file(tmp_path: Path) -> None:
    with pytest.raises(PipelineError, match=r"no pipeline spec file: create icetide-pipeline\.yml"):
        find_spec_file(tmp_path)
    spark = _write(tmp_path, "name: p\n", "spark-pipeline.yml")
    assert find_spec_file(tmp_path) == spark
    _write(tmp_path, "name: p\n")
    with pytest.raises(PipelineError, match="several pipeline spec files"):
        find_spec_file(tmp_path)
    assert find_spec_file(spark) == spark
    with pytest.raises(PipelineError, match="does not exist"):
        find_spec_file(tmp_path / "missing")


def test_a_python_file_is_not_taken_for_a_pipeline_folder(tmp_path: Path) -> None:
    flow = tmp_path / "clickevent.py"
    flow.write_text('"""ODS: click events"""\n')
    with pytest.raises(PipelineError, match=r"clickevent\.py is not a pipeline spec file: pass "
                                            r"the pipeline folder.*" + str(tmp_path)):
        read_spec_file(flow)


def test_defaults_maintenance_overrides_the_config_and_tables_override_it(
        tmp_path: Path) -> None:
    from icetide.config import MaintenanceConfig
    from icetide.engine.maintenance_schedule import run_policy
    from icetide.tables.maintenance_policy import table_policy

    spec = read_spec_file(_write(tmp_path, "name: p\ndefaults:\n  maintenance:\n"
                                 "    interval: 10 minutes\n    retain_last: 5\n"))
    assert dict(spec.defaults.maintenance) == {"interval": "10 minutes", "retain_last": 5}
    config = MaintenanceConfig(retain_last=50, snapshot_retention=60)
    base = run_policy(config, spec.defaults)
    assert (base.interval, base.retain_last, base.snapshot_retention) == (600.0, 5, 60.0)
    table = table_policy(base, {"icetide.maintenance.retain-last": "7"})
    assert (table.interval, table.retain_last) == (600.0, 7)
    assert run_policy(config, read_spec_file(_write(tmp_path, "name: q\n")).defaults) == config


def test_tables_section(tmp_path: Path) -> None:
    text = ("name: p\ntables:\n  ods.clicks: {freshness: 5s}\n"
            "  'dws.*': {freshness: 15 seconds, freshness_warn: 10s}\n")
    spec = read_spec_file(_write(tmp_path, text))
    assert list(spec.tables) == ["ods.clicks", "dws.*"]
    assert (spec.tables["ods.clicks"].freshness, spec.tables["ods.clicks"].freshness_warn) == (
        5.0, None)
    assert (spec.tables["dws.*"].freshness, spec.tables["dws.*"].freshness_warn) == (15.0, 10.0)


def test_storage_is_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(PipelineError, match=r"storage='/tmp/ck' is SDP's checkpoint location.*"
                                            r"Drop 'storage'"):
        read_spec_file(_write(tmp_path, "name: p\nstorage: /tmp/ck\n"))
