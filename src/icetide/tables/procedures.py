"""Iceberg's Spark procedures as SQL: validation and ``CALL`` text (pure, no JVM).

``icetide call "system.rewrite_data_files(table => 'db.t', strategy => 'sort')"`` and
``icetide sql "CALL lake.system.expire_snapshots(...)"`` go through :func:`parse_call`,
which checks the procedure and argument names against :data:`PROCEDURES` (pinned Iceberg runtime,
read from ``SparkProcedures`` — a test compares the two) before Spark sees the statement,
so a typo is answered with the list of valid names instead of a parser stack trace.
sqlglot reads the statement (Spark dialect; no dialect has ``CALL`` in its grammar, so the
text after the keyword is parsed as the expression ``[catalog.]system.name(...)``).
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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from sqlglot import Token, TokenType, exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError

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

class _Tokenizer(Spark.Tokenizer):
    """Spark's SQL, except that ``''`` inside a string is a quote (``tag => 'it''s'``), as
    icetide has always read it; Spark would join two strings."""

    STRING_ESCAPES: ClassVar[list[str]] = ["\\", "'"]


_SPARK = Spark()
_OPEN = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE})
_CLOSE = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE})
_SHAPE = ("write it as system.<procedure>(arg => value, ...), e.g. "
          "system.rewrite_data_files(table => 'db.t')")


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


def _tokens(text: str) -> list[Token]:
    try:
        return _Tokenizer(dialect=_SPARK).tokenize(text)
    except TokenError:
        raise MaintenanceError(f"unbalanced quotes in {text.strip()[:120]!r}: close every "
                               "quoted string") from None


def _is_call_keyword(token: Token) -> bool:
    """sqlglot reads ``CALL`` as a command: one token, the rest of the statement a string."""
    return token.token_type == TokenType.COMMAND and token.text.upper() == "CALL"


def is_call(text: str) -> bool:
    """Whether ``text`` is a ``CALL`` statement (for ``icetide sql``); one whose quotes do
    not close counts by its first word, so :func:`parse_call` names the problem."""
    try:
        tokens = _tokens(text)
    except MaintenanceError:
        return text.split(maxsplit=1)[0].upper() == "CALL"
    return bool(tokens) and _is_call_keyword(tokens[0])


def _body(text: str) -> tuple[str, list[Token]]:
    """The call without ``CALL`` and a final ``;``, and its tokens."""
    tokens = _tokens(text)
    if tokens and _is_call_keyword(tokens[0]):
        if len(tokens) < 2 or tokens[1].token_type != TokenType.STRING or any(
                t.token_type != TokenType.SEMICOLON for t in tokens[2:]):
            raise MaintenanceError(f"not one procedure call: {text.strip()[:120]!r}; {_SHAPE}")
        text = tokens[1].text
        tokens = _tokens(text)
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    return text, tokens


def _path(node: exp.Expr) -> list[exp.Expr]:
    """``lake.system`` → its identifiers."""
    return [*_path(node.this), node.expression] if isinstance(node, exp.Dot) else [node]


def _tree(text: str, tokens: list[Token]) -> tuple[exp.Func, list[str]]:
    """The parsed call ``[catalog.]system.<function>(...)`` and the names before the
    function; else :class:`MaintenanceError`."""
    try:
        statements = _SPARK.parser().parse(tokens, text)
    except ParseError as error:
        raise MaintenanceError(f"not a procedure call: {text.strip()[:120]!r} "
                               f"({error.errors[0]['description']}); {_SHAPE}") from None
    tree = statements[0] if len(statements) == 1 else None
    if isinstance(tree, exp.Dot) and isinstance(tree.expression, exp.Func):
        parts = _path(tree.this)
        if (len(parts) <= 2 and all(isinstance(p, exp.Identifier) for p in parts)
                and parts[-1].name.lower() == "system"):
            return tree.expression, [p.name for p in parts]
    raise MaintenanceError(f"not a procedure call: {text.strip()[:120]!r}; {_SHAPE}")


def parse_call(text: str) -> ProcedureCall:
    """Parse ``[CALL] [catalog.]system.name(arg => value, ...)`` and validate the names.

    sqlglot parses the call; each argument's value is kept as written, cut from the text
    at its tokens (Iceberg's ``CALL`` takes literals only, such as ``TIMESTAMP '…'``,
    which sqlglot would write back as a ``CAST``)."""
    body, tokens = _body(text)
    func, path = _tree(body, tokens)
    name = (func.name if isinstance(func, exp.Anonymous) else func.sql_name()).lower()
    args = _named_args(name, func.expressions, _values(body, tokens))
    validate(name, [k for k, _ in args])
    return ProcedureCall(name, tuple(args), path[0] if len(path) == 2 else None)


def _values(body: str, tokens: list[Token]) -> list[str]:
    """Each argument's value as written: the call's tokens between its parentheses, cut
    at top-level commas, without an argument's ``name =>``."""
    start = next(i for i, t in enumerate(tokens) if t.token_type == TokenType.L_PAREN)
    pieces: list[list[Token]] = [[]]
    depth = 0
    for token in tokens[start + 1:-1]:
        depth += (token.token_type in _OPEN) - (token.token_type in _CLOSE)
        if depth == 0 and token.token_type == TokenType.COMMA:
            pieces.append([])
        else:
            pieces[-1].append(token)
    values = [p[2:] if len(p) > 2 and p[1].token_type == TokenType.FARROW else p
              for p in pieces if p]
    return [body[v[0].start:v[-1].end + 1] for v in values]


def _named_args(name: str, args: list[exp.Expr], values: list[str]) -> list[tuple[str, str]]:
    required, optional = _procedure(name)
    order = required + optional
    out: list[tuple[str, str]] = []
    named_seen = False
    for index, (arg, value) in enumerate(zip(args, values, strict=True)):
        if isinstance(arg, exp.Kwarg):
            named_seen = True
            out.append((arg.this.name.lower(), value))
        elif named_seen:
            raise MaintenanceError(
                f"positional argument {value!r} of {name} after a named one: name it "
                "(arg => value)")
        elif index < len(order):
            out.append((order[index], value))
        else:
            raise MaintenanceError(
                f"{name} takes at most {len(order)} arguments ({', '.join(order)}); "
                f"got {len(args)}")
    return out


def _procedure(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    try:
        return PROCEDURES[name] if name in PROCEDURES else REF_PROCEDURES[name]
    except KeyError:
        raise MaintenanceError(
            f"unknown procedure {name!r}; Iceberg's procedures are: "
            f"{', '.join(sorted(PROCEDURES))}; tags and branches: "
            f"{', '.join(sorted(REF_PROCEDURES))}") from None


def _literal(text: str) -> exp.Expr | None:
    """The tree of one argument's value; ``None`` when it is not one expression."""
    try:
        trees = _SPARK.parser().parse(_tokens(text), text)
    except ParseError:
        return None
    return trees[0] if len(trees) == 1 else None


def _string_arg(name: str, arg: str, literal: str) -> str:
    """The text of a string literal argument (``'v1'`` → ``v1``)."""
    tree = _literal(literal)
    if not (isinstance(tree, exp.Literal) and tree.is_string):
        raise MaintenanceError(f"{name}: {arg} => {literal.strip()} must be a quoted string, "
                               f"e.g. {arg} => 'v1'")
    return tree.name


def _int_arg(name: str, arg: str, literal: str) -> int:
    """A whole-number argument: ``42`` or Spark's ``42L`` (read as a cast to bigint)."""
    tree = _literal(literal)
    number = tree.this if isinstance(tree, exp.Cast) else tree
    if not (isinstance(number, exp.Literal) and number.is_int):
        raise MaintenanceError(f"{name}: {arg} => {literal.strip()} must be a whole number, "
                               f"e.g. {arg} => 7")
    return int(number.name)


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
