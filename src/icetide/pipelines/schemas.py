"""Pure schema helpers: DDL strings → ``{column: type}`` and schema comparison.

Schemas are plain mappings of column name → Spark SQL type string (``"bigint"``,
``"struct<a:int>"``), so they can be compared without a JVM. Column names compare
case-insensitively (Spark's default); types are compared after normalising aliases
(``integer``→``int``, ``long``→``bigint``, ``varchar(n)``→``string``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from icetide.errors import PipelineError

_ALIASES = {
    "integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint",
    "real": "float", "bool": "boolean", "dec": "decimal", "numeric": "decimal",
    "text": "string",
}
_WORD_RE = re.compile(r"[a-z_][a-z0-9_]*")
_CHAR_RE = re.compile(r"\b(?:var)?char\(\d+\)")
_BARE_DECIMAL_RE = re.compile(r"\bdecimal\b(?!\()")
_NAME_RE = re.compile(r"^\s*(`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)\s*:?\s*(.*)$", re.DOTALL)
_CONSTRAINT_RE = re.compile(r"\s+(?:NOT\s+NULL|NULL|COMMENT|DEFAULT)\b", re.IGNORECASE)


def normalize_type(type_sql: str) -> str:
    """A canonical spelling of a Spark SQL type, for comparison."""
    text = re.sub(r"\s+", "", type_sql.strip().lower())
    text = _CHAR_RE.sub("string", text)
    text = _WORD_RE.sub(lambda m: _ALIASES.get(m.group(0), m.group(0)), text)
    return _BARE_DECIMAL_RE.sub("decimal(10,0)", text)


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside brackets, backticks and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "`'\"":
            quote = ch
        elif ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _strip_constraints(column_sql: str) -> str:
    """``"STRUCT<comment: STRING> NOT NULL COMMENT 'x'"`` → ``"STRUCT<comment: STRING>"``."""
    depth = 0
    depths = []
    for ch in column_sql:
        depth += 1 if ch in "<(" else -1 if ch in ">)" else 0
        depths.append(depth)
    for match in _CONSTRAINT_RE.finditer(column_sql):
        if depths[match.start()] == 0:
            return column_sql[: match.start()].strip()
    return column_sql.strip()


def parse_ddl(ddl: str) -> dict[str, str]:
    """``"a INT NOT NULL, `b c` STRING COMMENT 'x'"`` → ``{"a": "int", "b c": "string"}``."""
    columns: dict[str, str] = {}
    for part in split_top_level(ddl):
        match = _NAME_RE.match(part)
        type_sql = _strip_constraints(match.group(2)) if match else ""
        if match is None or not type_sql:
            raise PipelineError(
                f"schema column {part!r} is not 'name TYPE': write e.g. 'uid BIGINT, "
                "eventTime TIMESTAMP'"
            )
        name = match.group(1)
        if name.startswith("`"):
            name = name[1:-1].replace("``", "`")
        if name.lower() in (c.lower() for c in columns):
            raise PipelineError(f"schema {ddl!r} lists column {name!r} twice: remove one")
        columns[name] = normalize_type(type_sql)
    if not columns:
        raise PipelineError(f"schema {ddl!r} has no columns: write e.g. 'uid BIGINT'")
    return columns


@dataclass(frozen=True)
class SchemaDiff:
    """How a produced schema differs from a declared one."""

    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    mismatched: tuple[tuple[str, str, str], ...] = ()  # (column, declared, produced)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.mismatched)

    def describe(self) -> list[str]:
        """One human sentence per difference."""
        out = [f"column {c} is declared but the query does not produce it" for c in self.missing]
        out += [f"column {c} is produced but not declared (add it to the schema)"
                for c in self.extra]
        out += [f"column {c} is declared {d} but the query produces {p} (cast it)"
                for c, d, p in self.mismatched]
        return out


def compare_schemas(declared: Mapping[str, str], produced: Mapping[str, str]) -> SchemaDiff:
    """Compare ``{column: type}`` mappings; names case-insensitively, types normalised."""
    produced_by_key = {name.lower(): (name, t) for name, t in produced.items()}
    declared_keys = {name.lower() for name in declared}
    missing, mismatched = [], []
    for name, declared_type in declared.items():
        hit = produced_by_key.get(name.lower())
        if hit is None:
            missing.append(name)
        elif normalize_type(declared_type) != normalize_type(hit[1]):
            mismatched.append((name, normalize_type(declared_type), normalize_type(hit[1])))
    extra = [name for name in produced if name.lower() not in declared_keys]
    return SchemaDiff(tuple(missing), tuple(extra), tuple(mismatched))


def has_column(schema: Mapping[str, str], column: str) -> bool:
    """Whether the top-level column of ``column`` (``a`` of ``a.b``) is in ``schema``."""
    top = column.split(".")[0].lower()
    return any(name.lower() == top for name in schema)
