"""Planning a table's evolution (pure: no JVM)."""

from __future__ import annotations

import pytest

from icetide.engine.evolve import StoredTable, plan_evolution
from icetide.errors import SchemaChangeError

STORED = StoredTable((("uid", "string"), ("productId", "string"), ("n", "bigint")),
                     ("uid", "productId"), ())


def test_a_composite_key_in_another_order_is_the_same_key() -> None:
    """Iceberg keeps identifier fields as a set: ['uid', 'productId'] is the table's
    ['productId', 'uid'] (seen in the kill -9 run: every restart refused the table)."""
    wanted = [("productId", "string"), ("uid", "string"), ("n", "bigint")]
    evolution = plan_evolution("dws.pairs", STORED, wanted, ["productId", "uid"], [])
    assert not evolution.columns


def test_another_key_is_refused() -> None:
    with pytest.raises(SchemaChangeError, match="primary key"):
        plan_evolution("dws.pairs", STORED, list(STORED.columns), ["uid"], [])
