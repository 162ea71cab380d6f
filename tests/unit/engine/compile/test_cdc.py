"""create_auto_cdc_flow options icetide's CDC flows cannot honour are refused, not ignored."""

from __future__ import annotations

import pytest

from icetide import pipelines as dp
from icetide.engine.compile.cdc import NOT_APPLIED, check_cdc_options
from icetide.errors import PipelineError
from icetide.pipelines import GraphRegistry, registration_context
from icetide.sources import mysql


def _flow(**options: object) -> object:
    registry = GraphRegistry(database="dim", catalog="lake")
    with registration_context(registry):
        dp.create_streaming_table("dim.users", primary_key=["uid"])
        dp.create_auto_cdc_flow(target="dim.users", source=mysql.binlog("shop", table="db.users"),
                                keys=["uid"], sequence_by="_pos", **options)  # type: ignore[arg-type]
    return registry.flows["dim.users"]


@pytest.mark.parametrize(("option", "value"), [
    ("apply_as_deletes", "op = 'd'"), ("apply_as_truncates", "op = 't'"),
    ("column_list", ["uid"]), ("except_column_list", ["name"]), ("ignore_null_updates", True)])
def test_an_option_that_would_be_ignored_is_refused_with_the_reason(option: str,
                                                                     value: object) -> None:
    with pytest.raises(PipelineError, match=rf"flow 'lake.dim.users'|{option}=") as caught:
        check_cdc_options(_flow(**{option: value}))  # type: ignore[arg-type]
    assert f"{option}=" in str(caught.value) and NOT_APPLIED[option] in str(caught.value)
    assert f"drop {option}=" in str(caught.value)


def test_the_defaults_pass() -> None:
    check_cdc_options(_flow())  # type: ignore[arg-type]
