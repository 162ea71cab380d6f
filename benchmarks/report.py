"""Machine facts and the docs/benchmarks.md writer shared by the benchmarks."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
HEADER = (
    "# Benchmarks\n\nEach section is one run of one command; ratios compare side by side "
    "in that run (absolute times vary with the machine and its load).\n"
)


def machine() -> str:
    """CPU model, cores, memory, OS and Java: enough to compare runs."""
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    java_line = java.splitlines()[0] if java else "no java"
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB, {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}, {java_line}, "
            f"1-minute load average {_LOAD_AT_START:.1f} at start, "
            f"{os.getloadavg()[0]:.1f} at the end")


#: benchmarks import this module first: the load when the run began
_LOAD_AT_START = os.getloadavg()[0]


def append_section(title: str, body: str, doc: Path = DOC) -> Path:
    """Append a dated section to docs/benchmarks.md."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = doc.read_text() if doc.exists() else HEADER
    text = text.rstrip() + f"\n\n## {title} — {stamp}\n\nMachine: {machine()}\n\n{body.strip()}\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
    return doc
