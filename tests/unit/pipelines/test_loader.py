from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from icetide.errors import PipelineError
from icetide.pipelines import load_pipeline
from icetide.pipelines.loader import apply_defaults
from icetide.pipelines.registry import current_registry
from icetide.pipelines.spec import PipelineDefaults, TableSpec

SPEC = """
name: clickstream
catalog: lake
database: ods_behavior
sources:
  clicks: {type: kafka, topic: clicktopic}
defaults:
  freshness: 1 minute
  freshness_warn: 30 seconds
"""

CLICKS = '''
from icetide import pipelines as dp
from _schemas import CLICK_SCHEMA


@dp.expect_or_drop("known_user", "uid IS NOT NULL")
@dp.table(name="ods_behavior.clickevent", comment="Click events",
          partition_cols=["days(eventTime)"], freshness="10 seconds", schema=CLICK_SCHEMA)
def clickevent():
    return dp.read_stream("raw_clicks")
'''

VIEWS = '''
from icetide import pipelines as dp

dp.create_streaming_table("dws.product_views", primary_key=["productId"],
                          merge_engine="aggregation(views=sum)", changelog=True)


@dp.append_flow(target="dws.product_views")
def views_from_clicks(spark):
    return dp.read_stream("clickevent").groupBy("productId").count()

'''


def _pipeline(tmp_path: Path, files: dict[str, str], spec: str = SPEC) -> Path:
    (tmp_path / "icetide-pipeline.yml").write_text(spec)
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def _seed(tmp_path: Path) -> Path:
    return _pipeline(tmp_path, {
        "clicks.py": CLICKS,
        "views.py": VIEWS,
        "_schemas.py": "CLICK_SCHEMA = 'uid BIGINT, productId BIGINT, eventTime TIMESTAMP'\n",
    })


def test_load_two_files_and_a_yml(tmp_path: Path) -> None:
    graph = load_pipeline(_seed(tmp_path))
    assert graph.spec.name == "clickstream"
    assert sorted(graph.tables) == ["dws.product_views", "ods_behavior.clickevent"]
    assert sorted(graph.flows) == ["dws.views_from_clicks", "ods_behavior.clickevent"]
    click = graph.tables["ods_behavior.clickevent"]
    assert click.freshness == 10.0 and click.freshness_warn is None  # default warn >= 10s
    assert [e.name for e in click.expectations] == ["known_user"]
    assert click.location is not None and click.location.filename.endswith("clicks.py")
    views = graph.tables["dws.product_views"]
    assert (views.freshness, views.freshness_warn) == (60.0, 30.0)  # from defaults
    assert current_registry() is None  # the loading context is gone
    assert str(tmp_path.resolve()) not in sys.path


def test_load_accepts_the_spec_file_path(tmp_path: Path) -> None:
    graph = load_pipeline(_seed(tmp_path) / "icetide-pipeline.yml")
    assert "dws.product_views" in graph.tables


def test_default_libraries_skip_underscore_files(tmp_path: Path) -> None:
    _pipeline(tmp_path, {"_helper.py": "raise RuntimeError('must not be imported')\n",
                         "a.py": "from icetide import pipelines as dp\n"
                                 "dp.create_streaming_table('t')\n"})
    assert list(load_pipeline(tmp_path).tables) == ["ods_behavior.t"]


def test_library_globs(tmp_path: Path) -> None:
    spec = SPEC + "libraries:\n  - glob:\n      include: transformations/**\n  - top.py\n"
    _pipeline(tmp_path, {
        "transformations/a.py": "from icetide import pipelines as dp\n"
                                "dp.create_streaming_table('a')\n",
        "transformations/sub/b.py": "from icetide import pipelines as dp\n"
                                    "dp.create_streaming_table('b')\n",
        "transformations/notes.md": "ignored",
        "top.py": "from icetide import pipelines as dp\ndp.create_streaming_table('top')\n",
        "unlisted.py": "raise RuntimeError('not in libraries')\n",
    }, spec)
    assert sorted(load_pipeline(tmp_path).tables) == [
        "ods_behavior.a", "ods_behavior.b", "ods_behavior.top"]


@pytest.mark.parametrize(
    ("libraries", "message"),
    [
        ("  - nothing/*.py\n", "matches no .py file"),
        ("  - /abs/*.py\n", "must be relative"),
        ("  - ../x.py\n", "must be relative"),
        ("  - defs.sql\n", "SQL definition files are not supported"),
    ],
)
def test_library_errors(tmp_path: Path, libraries: str, message: str) -> None:
    _pipeline(tmp_path, {"defs.sql": "CREATE MATERIALIZED VIEW x AS SELECT 1"},
              SPEC + "libraries:\n" + libraries)
    with pytest.raises(PipelineError, match=message):
        load_pipeline(tmp_path)


def test_duplicate_names_across_files_name_both_files(tmp_path: Path) -> None:
    decl = "from icetide import pipelines as dp\ndp.create_streaming_table('dws.x')\n"
    _pipeline(tmp_path, {"a.py": decl, "b.py": decl})
    with pytest.raises(PipelineError, match=r"declared twice: at .*a\.py:2 and at .*b\.py:2"):
        load_pipeline(tmp_path)


def test_import_failure_is_wrapped_with_the_file(tmp_path: Path) -> None:
    _pipeline(tmp_path, {"broken.py": "import does_not_exist_anywhere\n"})
    with pytest.raises(PipelineError, match=r"broken\.py: importing it failed: ModuleNotFound"):
        load_pipeline(tmp_path)


def test_declaration_errors_carry_file_and_line(tmp_path: Path) -> None:
    bad = "dp.create_streaming_table('t', partition_cols=['weeks(ts)'])\n"
    _pipeline(tmp_path, {"bad.py": "from icetide import pipelines as dp\n\n" + bad})
    with pytest.raises(PipelineError, match=r"bad\.py:3: unknown partition transform"):
        load_pipeline(tmp_path)


def test_names_need_a_database_when_the_spec_has_none(tmp_path: Path) -> None:
    _pipeline(tmp_path, {"a.py": "from icetide import pipelines as dp\n"
                                 "dp.create_streaming_table('t')\n"}, "name: p\n")
    with pytest.raises(PipelineError, match=r"a\.py:2: table name 't' has no database"):
        load_pipeline(tmp_path)


def test_dangling_expectation_fails_the_load(tmp_path: Path) -> None:
    _pipeline(tmp_path, {"a.py": "from icetide import pipelines as dp\n"
                                 "@dp.expect('e', 'x > 0')\ndef f(): ...\n"})
    with pytest.raises(PipelineError, match="belong to no table"):
        load_pipeline(tmp_path)


def test_loading_twice_gives_independent_graphs(tmp_path: Path) -> None:
    first = load_pipeline(_seed(tmp_path))
    second = load_pipeline(tmp_path)
    assert first.tables == second.tables
    f1 = first.flows["ods_behavior.clickevent"].query
    f2 = second.flows["ods_behavior.clickevent"].query
    assert f1 is not f2 and f1 is not None and f2 is not None
    assert f1.__module__ != f2.__module__


def test_apply_defaults() -> None:
    d = PipelineDefaults(freshness=60.0, freshness_warn=30.0)
    assert apply_defaults(TableSpec("db.t"), d).freshness == 60.0
    t = apply_defaults(TableSpec("db.t", freshness=20.0), d)
    assert (t.freshness, t.freshness_warn) == (20.0, None)
    t = apply_defaults(TableSpec("db.t", freshness=120.0), d)
    assert (t.freshness, t.freshness_warn) == (120.0, 30.0)
    view = TableSpec("db.v", kind="temporary_view")
    assert apply_defaults(view, d) is view
    with pytest.raises(PipelineError, match="must be below freshness"):
        apply_defaults(TableSpec("db.t", freshness_warn=90.0), d)


TABLES = SPEC + """
tables:
  "dws.*": {freshness: 15 seconds}
  clickevent: {freshness: 5s}
  "*": {freshness_warn: 4s}
"""


def test_spec_tables_replace_the_code_and_defaults_fill_the_rest(tmp_path: Path) -> None:
    _seed(tmp_path)
    (tmp_path / "icetide-pipeline.yml").write_text(TABLES)
    graph = load_pipeline(tmp_path)
    click = graph.tables["ods_behavior.clickevent"]
    assert (click.freshness, click.freshness_warn) == (5.0, 4.0)  # the code said 10 s
    views = graph.tables["dws.product_views"]
    assert (views.freshness, views.freshness_warn) == (15.0, 4.0)  # the code said nothing


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("dws.product_view: {freshness: 5s}",
         r"tables.dws.product_view matches no table of the pipeline \(its tables: "
         r"dws.product_views, ods_behavior.clickevent\)"),
        ("recent: {freshness: 5s}", "tables.recent matches no table"),
        ("clickevent: {freshness_warn: 20s}",
         r"tables.clickevent \(ods_behavior.clickevent\):.*freshness_warn \(20s\) must be "
         r"below freshness \(10s\).*set freshness and freshness_warn together"),
    ],
)
def test_spec_tables_errors(tmp_path: Path, entry: str, message: str) -> None:
    _seed(tmp_path)
    (tmp_path / "icetide-pipeline.yml").write_text(SPEC + f"tables:\n  {entry}\n")
    with pytest.raises(PipelineError, match=message):
        load_pipeline(tmp_path)
