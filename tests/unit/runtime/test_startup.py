"""runtime.startup: each phase logged once, with its end and the process's age."""

from __future__ import annotations

import logging
import time

import pytest

from icetide.runtime import startup


def test_each_phase_is_logged_once_with_its_end(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=startup.__name__):
        startup.phase("unit-test phase", at=startup.process_started() + 1.5, detail="a=1.00")
        startup.phase("unit-test phase", at=999.0)
    (line,) = [r.getMessage() for r in caplog.records if "unit-test phase" in r.getMessage()]
    assert line.startswith(f"{startup.PREFIX} unit-test phase at ")
    assert line.endswith("(+1.50s) a=1.00")


def test_the_process_start_is_before_its_imports() -> None:
    assert startup.process_started() <= startup._IMPORTED <= time.time()
