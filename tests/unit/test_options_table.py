"""docs/options.md lists every option icetide takes — the declarative API's keywords, the
pipeline file's keys, the settings of icetide.yaml — each with tests that show it at work
(or that it is refused): a new option without a row, a row for no option, or a cited
test that does not exist fails here."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import BaseModel

from icetide.config import Settings
from icetide.pipelines import api
from icetide.pipelines.specfile import DEFAULTS_KEYS, TABLE_OVERRIDE_KEYS, TOP_LEVEL_KEYS
from icetide.sources.registry import SOURCE_TYPES, source_type
from icetide.tables import merge_engines

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "options.md"
SECTIONS = {"api": "## Pipeline API", "file": "## Pipeline file", "config": "## Configuration"}
_FUNCTIONS: tuple[Callable[..., object], ...] = (
    api.append_flow, api.create_auto_cdc_flow, api.configuration, merge_engines.deduplicate,
    merge_engines.partial_update, merge_engines.aggregation, merge_engines.first_row)


def _rows() -> dict[str, dict[str, list[str]]]:
    """Per section: option → the tests its row cites."""
    found: dict[str, dict[str, list[str]]] = {}
    section = None
    for line in TABLE.read_text().splitlines():
        heading = [name for name, start in SECTIONS.items() if line.startswith(start)]
        if line.startswith("## "):
            section = heading[0] if heading else None
        elif section is not None and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            key = cells[0].strip("`")
            found.setdefault(section, {})[key] = re.findall(r"`([^`]+::[^`]+)`", cells[-1])
    return found


def _settings(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield from _settings(kind, f"{prefix}{name}.")
        else:
            yield prefix + name


def _expected() -> dict[str, set[str]]:
    keywords = {f"dataset.{k}" for k in api.TableOptions.__annotations__} | {"temporary_view"}
    keywords |= {f"{f.__name__}.{p}" for f in _FUNCTIONS for p in inspect.signature(f).parameters}
    keys = set(TOP_LEVEL_KEYS) | {f"defaults.{k}" for k in DEFAULTS_KEYS}
    keys |= {f"tables.{k}" for k in TABLE_OVERRIDE_KEYS} | {"sources.type"}
    keys |= {f"sources.{kind}.{field}" for kind in SOURCE_TYPES
             for field in source_type(kind).Config.model_fields}
    return {"api": keywords, "file": keys, "config": set(_settings(Settings))}


def test_every_option_has_a_row_and_every_row_an_option() -> None:
    rows, expected = _rows(), _expected()
    for section, wanted in expected.items():
        listed = set(rows.get(section, {}))
        assert not wanted - listed, f"{SECTIONS[section]}: no row for {sorted(wanted - listed)}"
        assert not listed - wanted, f"{SECTIONS[section]}: rows for no option: " \
                                    f"{sorted(listed - wanted)}"


def test_every_row_cites_tests_that_exist() -> None:
    for section, rows in _rows().items():
        for key, refs in rows.items():
            assert refs, f"{SECTIONS[section]}: `{key}` cites no test"
            for ref in refs:
                path, name = ref.split("::")
                source = ROOT / "tests" / path
                assert source.is_file(), f"`{key}`: {path} does not exist"
                assert re.search(rf"^def {name}\(", source.read_text(), re.MULTILINE), \
                    f"`{key}`: {path} has no test {name}"
