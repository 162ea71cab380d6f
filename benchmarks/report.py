"""Machine facts and the writer of docs/benchmarks.md and its history, shared by the benchmarks.

docs/benchmarks.md is a report: one table of each benchmark's latest figures (date,
machine, load at start and end, the headline ratios), then each benchmark's latest run in
full. Every run is also appended, dated, to docs/benchmarks-history.md, which is the log.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
DOC = DOCS / "benchmarks.md"
HISTORY = DOCS / "benchmarks-history.md"
TABLE_BEGIN, TABLE_END = "<!-- current:begin -->", "<!-- current:end -->"
TABLE_HEAD = ("| benchmark | latest run | machine | load start → end | headline |\n"
              "| --- | --- | --- | --- | --- |")
HISTORY_HEADER = (
    "# Benchmark history\n\nEvery run of every benchmark, oldest first, as each command "
    "wrote it (docs/benchmarks.md has the latest of each). Ratios compare side by side in "
    "one run; absolute times vary with the machine and its load.\n")

#: benchmarks import this module first: the load when the run began
_LOAD_AT_START = os.getloadavg()[0]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def short_machine() -> str:
    """CPU model, cores and memory: the table's machine column."""
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{_cpu_model()}, {os.cpu_count()} cores, {mem:.0f} GiB"


def machine() -> str:
    """CPU model, cores, memory, OS and Java: enough to compare runs."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    java_line = java.splitlines()[0] if java else "no java"
    return (f"{short_machine()}, {platform.system()} {platform.release()}, Python "
            f"{platform.python_version()}, {java_line}, 1-minute load average "
            f"{_LOAD_AT_START:.2f} at start, {os.getloadavg()[0]:.2f} at the end")


@dataclass(frozen=True)
class Run:
    """One finished run: what the table and the sections say of it."""

    title: str
    body: str
    headline: str
    stamp: str
    machine: str  # :func:`machine`, taken once at the end of the run

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")

    def section(self) -> str:
        return f"## {self.title} — {self.stamp}\n\nMachine: {self.machine}\n\n{self.body.strip()}\n"

    def row(self) -> str:
        load = f"{_LOAD_AT_START:.2f} → {os.getloadavg()[0]:.2f}"
        headline = self.headline.replace("|", "\\|").replace("\n", " ")
        return (f"| [{self.title}](#{self.slug}) | {self.stamp} | {short_machine()} | {load} "
                f"| {headline} |")


def _upsert_row(text: str, run: Run) -> str:
    head, _, rest = text.partition(TABLE_BEGIN)
    table, _, tail = rest.partition(TABLE_END)
    rows = [line for line in table.strip().splitlines()[2:]
            if line.startswith("|") and f"[{run.title}](" not in line]
    rows = sorted([*rows, run.row()])
    return f"{head}{TABLE_BEGIN}\n{TABLE_HEAD}\n" + "\n".join(rows) + f"\n{TABLE_END}{tail}"


def _upsert_section(text: str, run: Run) -> str:
    begin, end = f"<!-- latest:{run.slug} -->", f"<!-- /latest:{run.slug} -->"
    block = f'{begin}\n<a id="{run.slug}"></a>\n\n{run.section()}{end}'
    if begin in text and end in text:
        head, _, rest = text.partition(begin)
        return head + block + rest.partition(end)[2]
    return text.rstrip() + f"\n\n{block}\n"


def append_section(title: str, body: str, *, headline: str = "", doc: Path = DOC,
                   history: Path = HISTORY) -> Path:
    """Record a run: its row in the table and its full section in ``doc`` (replacing the
    benchmark's previous latest run), and the section appended to ``history``."""
    run = Run(title, body, headline or "see the section",
              datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), machine())
    if not doc.exists():
        raise FileNotFoundError(f"{doc} is missing: restore it from git (it holds the table "
                                f"between {TABLE_BEGIN} and {TABLE_END})")
    doc.write_text(_upsert_section(_upsert_row(doc.read_text(), run), run))
    old = history.read_text() if history.exists() else HISTORY_HEADER
    history.write_text(old.rstrip() + f"\n\n{run.section()}")
    return doc
