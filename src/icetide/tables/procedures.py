"""Iceberg's Spark procedures as SQL: validation and ``CALL`` text (pure, no JVM).

``icetide call "system.rewrite_data_files(table => 'db.t', strategy => 'sort')"`` and
``icetide sql "CALL lake.system.expire_snapshots(...)"`` go through :func:`parse_call`,
which checks the procedure and argument names against :data:`PROCEDURES` (pinned Iceberg runtime,
read from ``SparkProcedures`` — a test compares the two) before Spark sees the statement,
so a typo is answered with the list of valid names instead of a parser stack trace.
Argument *values* are SQL literals (``'text'``, ``42``, ``true``, ``map('k', 'v')``,
``TIMESTAMP '2026-01-01 00:00:00'``) passed through as written; :func:`call_sql` renders
Python values for generated calls.

Tags and branches are DDL in Iceberg's Spark SQL (``ALTER TABLE … CREATE TAG``), not
procedures; :data:`REF_PROCEDURES` names them as calls all the same (``system.create_tag(
table => 'db.t', tag => 'v1')``), so ``icetide call`` creates and drops them beside
``rollback_to_snapshot`` and lists them in its help; :meth:`ProcedureCall.sql` renders
them as that DDL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from icetide.errors import MaintenanceError
from icetide.tables.sql import quote_ident, quote_qualified, sql_literal, sql_string

#: procedure → (required arguments, optional arguments), in Iceberg's positional order.
PROCEDURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "add_files": (("table", "source_table"),
                  ("partition_filter", "check_duplicate_files", "parallelism")),
    "ancestors_of": (("table",), ("snapshot_id",)),
    "cherrypick_snapshot": (("table", "snapshot_id"), ()),
    "compute_partition_stats": (("table",), ("snapshot_id",)),
    "compute_table_stats": (("table",), ("snapshot_id", "columns")),
    "create_changelog_view": (("table",), ("changelog_view", "options", "compute_updates",
                                           "identifier_columns", "net_changes")),
    "expire_snapshots": (("table",), ("older_than", "retain_last", "max_concurrent_deletes",
                                      "stream_results", "snapshot_ids",
                                      "clean_expired_metadata")),
    "fast_forward": (("table", "branch", "to"), ()),
    "migrate": (("table",), ("properties", "drop_backup", "backup_table_name", "parallelism",
                             "ignore_missing_files")),
    "publish_changes": (("table", "wap_id"), ()),
    "register_table": (("table", "metadata_file"), ()),
    "remove_orphan_files": (("table",), ("older_than", "location", "dry_run",
                                         "max_concurrent_deletes", "file_list_view",
                                         "equal_schemes", "equal_authorities",
                                         "prefix_mismatch_mode", "prefix_listing",
                                         "stream_results")),
    "rewrite_data_files": (("table",), ("strategy", "sort_order", "options", "where",
                                        "branch")),
    "rewrite_manifests": (("table",), ("use_caching", "spec_id", "sort_by")),
    "rewrite_position_delete_files": (("table",), ("options", "where")),
    "rewrite_table_path": (("table", "source_prefix", "target_prefix"),
                           ("start_version", "end_version", "staging_location",
                            "create_file_list")),
    "rollback_to_snapshot": (("table", "snapshot_id"), ()),
    "rollback_to_timestamp": (("table", "timestamp"), ()),
    "set_current_snapshot": (("table",), ("snapshot_id", "ref")),
    "snapshot": (("source_table", "table"), ("location", "properties", "parallelism",
                                             "ignore_missing_files")),
}

#: icetide's calls for Iceberg's refs → (required, optional) arguments; rendered as
#: ``ALTER TABLE … CREATE|DROP TAG|BRANCH`` (:func:`ref_sql`). ``snapshot_id``: the
#: snapshot tagged or branched from (default: the current one); ``retain_days``: how long
#: the ref (a tag: its snapshot too) outlives snapshot expiry (default: forever).
REF_PROCEDURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "create_tag": (("table", "tag"), ("snapshot_id", "retain_days")),
    "create_branch": (("table", "branch"), ("snapshot_id", "retain_days")),
    "drop_tag": (("table", "tag"), ()),
    "drop_branch": (("table", "branch"), ()),
}

_CALL = re.compile(
    r"^\s*(?:call\s+)?(?:(?P<catalog>`[^`]+`|\w+)\s*\.\s*)?system\s*\.\s*(?P<name>\w+)\s*"
    r"\((?P<args>.*)\)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_NAMED = re.compile(r"^\s*(?P<name>\w+)\s*=>\s*(?P<value>.+?)\s*$", re.DOTALL)


@dataclass(frozen=True)
class ProcedureCall:
    """A validated call: procedure name and its named arguments (SQL literal text)."""

    name: str
    args: tuple[tuple[str, str], ...]
    catalog: str | None = None

    def sql(self, default_catalog: str) -> str:
        """``CALL `cat`.system.name(arg => value, ...)``; a ref call: its DDL."""
        if self.name in REF_PROCEDURES:
            return ref_sql(self.catalog or default_catalog, self.name, dict(self.args))
        cat = quote_ident(self.catalog or default_catalog)
        inner = ", ".join(f"{k} => {v}" for k, v in self.args)
        return f"CALL {cat}.system.{self.name}({inner})"


def is_call(text: str) -> bool:
    """Whether ``text`` is a ``CALL`` statement (for ``icetide sql``)."""
    return bool(re.match(r"^\s*call\s", text, re.IGNORECASE))


def parse_call(text: str) -> ProcedureCall:
    """Parse ``[CALL] [catalog.]system.name(arg => value, ...)`` and validate the names."""
    match = _CALL.match(text)
    if match is None:
        raise MaintenanceError(
            f"not a procedure call: {text.strip()[:120]!r}; write it as "
            "system.<procedure>(arg => value, ...), e.g. "
            "system.rewrite_data_files(table => 'db.t')")
    name = match.group("name").lower()
    catalog = match.group("catalog")
    args = _named_args(name, split_args(match.group("args")))
    validate(name, [k for k, _ in args])
    return ProcedureCall(name, tuple(args), catalog.strip("`") if catalog else None)


def _named_args(name: str, parts: list[str]) -> list[tuple[str, str]]:
    required, optional = _procedure(name)
    order = required + optional
    out: list[tuple[str, str]] = []
    named_seen = False
    for index, part in enumerate(parts):
        named = _NAMED.match(part)
        if named is not None:
            named_seen = True
            out.append((named.group("name").lower(), named.group("value")))
        elif named_seen:
            raise MaintenanceError(
                f"positional argument {part.strip()!r} of {name} after a named one: name it "
                "(arg => value)")
        elif index < len(order):
            out.append((order[index], part.strip()))
        else:
            raise MaintenanceError(
                f"{name} takes at most {len(order)} arguments ({', '.join(order)}); "
                f"got {len(parts)}")
    return out


def split_args(text: str) -> list[str]:
    """Split at top-level commas, outside quotes and parentheses."""
    parts: list[str] = []
    depth, quote, escaped = 0, "", False
    buf: list[str] = []
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch in "()":
            depth += 1 if ch == "(" else -1
        elif ch == "," and depth == 0:
            parts.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    if quote or depth:
        raise MaintenanceError(f"unbalanced quotes or parentheses in arguments ({text!r})")
    tail = "".join(buf)
    return [*parts, tail] if tail.strip() or parts else []


def _procedure(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    try:
        return PROCEDURES[name] if name in PROCEDURES else REF_PROCEDURES[name]
    except KeyError:
        raise MaintenanceError(
            f"unknown procedure {name!r}; Iceberg's procedures are: "
            f"{', '.join(sorted(PROCEDURES))}; tags and branches: "
            f"{', '.join(sorted(REF_PROCEDURES))}") from None


def _string_arg(name: str, arg: str, literal: str) -> str:
    """The text of a string literal argument (``'v1'`` → ``v1``)."""
    text = literal.strip()
    if len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0]:
        raise MaintenanceError(f"{name}: {arg} => {literal.strip()} must be a quoted string, "
                               f"e.g. {arg} => 'v1'")
    return text[1:-1].replace(text[0] * 2, text[0]).replace("\\" + text[0], text[0])


def _int_arg(name: str, arg: str, literal: str) -> int:
    text = literal.strip()
    if not re.fullmatch(r"\d+L?", text):
        raise MaintenanceError(f"{name}: {arg} => {text} must be a whole number, e.g. "
                               f"{arg} => 7")
    return int(text.rstrip("L"))


def ref_sql(catalog: str, name: str, args: Mapping[str, str]) -> str:
    """The DDL of a ref call (:data:`REF_PROCEDURES`): ``ALTER TABLE `cat`.`db`.`t` CREATE
    TAG `v1` AS OF VERSION 42 RETAIN 7 DAYS`` and the like."""
    action, kind = name.split("_")
    table = quote_qualified(f"{catalog}.{_string_arg(name, 'table', args['table'])}")
    ref = quote_ident(_string_arg(name, kind, args[kind]))
    statement = f"ALTER TABLE {table} {action.upper()} {kind.upper()} {ref}"
    if "snapshot_id" in args:
        statement += f" AS OF VERSION {_int_arg(name, 'snapshot_id', args['snapshot_id'])}"
    if "retain_days" in args:
        statement += f" RETAIN {_int_arg(name, 'retain_days', args['retain_days'])} DAYS"
    return statement


def procedures_help() -> str:
    """Every procedure with its arguments, for ``icetide call --help``."""
    lines = ["Iceberg's procedures (required arguments, [optional]):"]
    for title, table in (("", PROCEDURES), ("tags and branches:", REF_PROCEDURES)):
        if title:
            lines.append(title)
        for proc, (required, optional) in sorted(table.items()):
            shown = [*required, *(f"[{a}]" for a in optional)]
            lines.append(f"  {proc}({', '.join(shown)})")
    return "\n".join(lines)


def validate(name: str, arg_names: list[str]) -> None:
    """Raise :class:`MaintenanceError` for an unknown procedure, an unknown, repeated or
    missing argument."""
    required, optional = _procedure(name)
    allowed = required + optional
    unknown = [a for a in arg_names if a not in allowed]
    if unknown:
        raise MaintenanceError(
            f"unknown argument {unknown[0]!r} of {name}; its arguments are: "
            f"{', '.join(allowed)} (required: {', '.join(required)})")
    repeated = sorted({a for a in arg_names if arg_names.count(a) > 1})
    if repeated:
        raise MaintenanceError(f"argument {repeated[0]!r} of {name} given twice")
    missing = [a for a in required if a not in arg_names]
    if missing:
        raise MaintenanceError(
            f"{name} needs argument {missing[0]!r} (required: {', '.join(required)})")


def options_literal(options: Mapping[str, str]) -> str:
    """``map('k', 'v', ...)`` for a procedure's ``options`` argument."""
    inner = ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in sorted(options.items()))
    return f"map({inner})"


def call_sql(catalog: str, name: str, args: Mapping[str, object]) -> str:
    """A generated, validated call; ``dict`` values become ``map(...)``, others literals."""
    validate(name, list(args))
    rendered = tuple(
        (k, options_literal({str(a): str(b) for a, b in v.items()}) if isinstance(v, dict)
         else sql_literal(v)) for k, v in args.items())
    return ProcedureCall(name, rendered).sql(catalog)
