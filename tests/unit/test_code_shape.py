"""The code's shape rules, checked here rather than kept by memory: every source file
under 500 lines, every function under 40 lines."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "icetide"
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 40


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_file_is_under_500_lines() -> None:
    long = {str(p.relative_to(SRC)): n for p in _sources()
            if (n := len(p.read_text().splitlines())) >= MAX_FILE_LINES}
    assert not long, f"split these files (one job per file): {long}"


def test_every_function_is_under_40_lines() -> None:
    long = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(SRC)}:{node.name}"] = lines
    assert not long, f"split these functions: {long}"
