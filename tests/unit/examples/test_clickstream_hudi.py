"""examples/clickstream: seed 002's Hudi twin of dim_db.user_member, only when asked."""

from __future__ import annotations

import pytest

from icetide.errors import PipelineError
from icetide.pipelines import load_pipeline
from tests.unit.examples.test_clickstream_targets import EXAMPLE


def test_the_hudi_twin_follows_the_same_mysql_table_when_asked() -> None:
    graph = load_pipeline(EXAMPLE, env={"CLICKSTREAM_DIMS": "cdc", "CLICKSTREAM_HUDI": "true"})
    iceberg, hudi = graph.tables["dim_db.user_member"], graph.tables["dim_db.user_member_hudi"]
    assert (iceberg.format, hudi.format) == ("iceberg", "hudi")
    sources = {graph.flows[t].cdc.source for t in ("dim_db.user_member",  # type: ignore[union-attr]
                                                   "dim_db.user_member_hudi")}
    assert len(sources) == 1  # one MySQL table feeds both


def test_without_it_no_hudi_table_is_declared() -> None:
    graph = load_pipeline(EXAMPLE, env={"CLICKSTREAM_DIMS": "cdc"})
    assert "dim_db.user_member_hudi" not in graph.tables


@pytest.mark.parametrize("env", [{"CLICKSTREAM_HUDI": "true"},
                                 {"CLICKSTREAM_DIMS": "cdc", "CLICKSTREAM_HUDI": "yes"}])
def test_a_hudi_twin_without_cdc_or_a_bad_value_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(PipelineError, match=r"clickstream\.hudi=.*with clickstream\.dims=cdc"):
        load_pipeline(EXAMPLE, env=env)
