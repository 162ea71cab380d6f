"""``icetide demo`` finds examples/clickstream from any directory of a source checkout
install, not only from the checkout's root."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.devkit.demo.runner import find_example
from icetide.errors import PipelineError

CHECKOUT = Path(__file__).resolve().parents[4]


def test_found_from_another_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert find_example() == CHECKOUT / "examples" / "clickstream"


def test_unknown_example_names_where_it_looked(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PipelineError, match=r"cannot find examples/nope .*--pipeline PATH"):
        find_example("nope")
