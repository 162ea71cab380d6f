"""benchmarks/report: docs/benchmarks.md keeps each benchmark's latest run; history keeps all."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.report import TABLE_BEGIN, TABLE_END, append_section


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    path = tmp_path / "benchmarks.md"
    path.write_text(f"# Benchmarks\n\nintro\n\n{TABLE_BEGIN}\n{TABLE_END}\n\n## How to run\n\nx\n")
    return path


def test_latest_run_replaces_the_previous_one_and_history_keeps_both(
        doc: Path, tmp_path: Path) -> None:
    history = tmp_path / "history.md"
    append_section("Query (benchmarks/query)", "first body", headline="p50 1 ms", doc=doc,
                   history=history)
    append_section("Brokers (benchmarks/brokers)", "broker body", headline="a | b",
                   doc=doc, history=history)
    append_section("Query (benchmarks/query)", "second body", headline="p50 2 ms", doc=doc,
                   history=history)
    text = doc.read_text()
    table = text.split(TABLE_BEGIN)[1].split(TABLE_END)[0]
    rows = [r for r in table.splitlines() if r.startswith("| [")]
    assert len(rows) == 2
    assert "p50 2 ms" in table and "p50 1 ms" not in table
    assert "a \\| b" in table  # a pipe in a headline does not break the table
    assert "second body" in text and "first body" not in text and "broker body" in text
    assert text.index("## How to run") < text.index("second body")  # sections after the prose
    past = history.read_text()
    assert past.index("first body") < past.index("broker body") < past.index("second body")


def test_a_missing_report_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="restore it from git"):
        append_section("X", "body", doc=tmp_path / "none.md", history=tmp_path / "h.md")
