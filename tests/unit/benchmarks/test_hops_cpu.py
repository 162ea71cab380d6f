"""The CPU-ms table of ``python -m benchmarks.hops``."""

from __future__ import annotations

from benchmarks.hops.cpu_parts import PARTS, PYTHON, TOTAL, cpu_table


def test_the_table_has_a_row_per_part_and_their_sum() -> None:
    figures = {f"cpu {part} {phase}": 10.0 for part in PARTS for phase in ("check", "write")}
    figures.update({f"cpu {part} {TOTAL}": 30.0 for part in PARTS})
    table = cpu_table({"ODS": figures})
    assert table.splitlines()[0] == "| hop | part | check | write | whole batch |"
    assert f"| ODS | {PYTHON} | 10 | 10 | 30 |" in table
    assert f"| ODS | **all** | {10 * len(PARTS)} | {10 * len(PARTS)} | **{30 * len(PARTS)}** |" \
        in table
