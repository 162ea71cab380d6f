"""Shared fixtures: an active registry so the dp API can be called in a test body."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from icetide.pipelines import GraphRegistry, registration_context, set_reader


@pytest.fixture
def registry() -> Iterator[GraphRegistry]:
    reg = GraphRegistry(database="db", catalog="lake")
    with registration_context(reg):
        yield reg


@pytest.fixture(autouse=True)
def _no_reader() -> Iterator[None]:
    previous = set_reader(None)
    yield
    set_reader(previous)
