"""MySQL DDL statements in the binlog (pure): which tables a statement touches, and the
column renames an ``ALTER TABLE`` makes (the generic diff is :mod:`icetide.cdc.evolution`).

Statements are parsed into a tree by sqlglot (MySQL dialect). What that dialect does not
parse — MariaDB's ``ALTER ONLINE|IGNORE TABLE``, ``IF [NOT] EXISTS`` on a column, ``DROP
TABLES``, ``RENAME TABLE a TO b, ...`` — is parsed from sqlglot's tokens of it instead, so
no DDL on a followed table goes unnoticed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Literal

import sqlglot
from sqlglot import Token, TokenType, exp
from sqlglot.errors import SqlglotError

DdlKind = Literal["alter", "create", "drop", "rename", "truncate", "other"]

_DIALECT = "mysql"
#: Words between the verb and ``TABLE`` that sqlglot's MySQL dialect does not know.
_MODIFIERS = frozenset({"ONLINE", "IGNORE", "OR", "REPLACE", "TEMPORARY"})
_KINDS: dict[str, DdlKind] = {"ALTER": "alter", "CREATE": "create", "DROP": "drop",
                              "RENAME": "rename", "TRUNCATE": "truncate"}


@contextmanager
def _quiet() -> Iterator[None]:
    """sqlglot warns when it falls back to a generic command: expected here."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _tree(query: str) -> exp.Expr | None:
    try:
        with _quiet():
            return sqlglot.parse_one(query, read=_DIALECT)
    except SqlglotError:
        return None


def _tokens(query: str) -> list[Token]:
    try:
        tokens = sqlglot.tokenize(query, read=_DIALECT)
    except SqlglotError:
        return []
    if len(tokens) == 2 and tokens[1].token_type == TokenType.STRING and tokens[0].text.upper(
            ) in _KINDS:  # a verb sqlglot reads as a command (RENAME): its text, as tokens
        return [tokens[0], *_tokens(tokens[1].text)]
    return tokens


def _name(table: exp.Table, default_db: str) -> str:
    return f"{table.db or default_db}.{table.name}"


def classify_ddl(query: str, default_db: str) -> tuple[DdlKind, list[str]]:
    """The kind of a DDL statement and the qualified tables it names (``db.table``; a
    bare name is in ``default_db``): for ALTER and CREATE the table itself, for DROP,
    RENAME and TRUNCATE every table named."""
    tree = _tree(query)
    if isinstance(tree, exp.Alter | exp.Create | exp.Drop | exp.TruncateTable):
        kind = _kind(tree)
        if kind == "other":
            return kind, []
        if kind in ("alter", "create"):
            target = tree.find(exp.Table)
            return kind, [_name(target, default_db)] if target is not None else []
        return kind, [_name(t, default_db) for t in tree.find_all(exp.Table)]
    return _classify_tokens(_tokens(query), default_db)


def _kind(tree: exp.Alter | exp.Create | exp.Drop | exp.TruncateTable) -> DdlKind:
    if isinstance(tree, exp.TruncateTable):
        return "truncate"
    if str(tree.args.get("kind") or "").upper() != "TABLE":
        return "other"  # CREATE INDEX, DROP VIEW...
    return "alter" if isinstance(tree, exp.Alter) else _KINDS[tree.key.upper()]


def _classify_tokens(tokens: Sequence[Token], default_db: str) -> tuple[DdlKind, list[str]]:
    """A statement sqlglot does not parse: ``VERB [modifiers] TABLE[S] [IF [NOT] EXISTS]
    name ...``; DROP/RENAME go on naming tables after commas and ``TO``."""
    if not tokens or tokens[0].text.upper() not in _KINDS:
        return "other", []
    kind = _KINDS[tokens[0].text.upper()]
    i = 1
    while i < len(tokens) and tokens[i].text.upper() in _MODIFIERS:
        i += 1
    if i >= len(tokens) or tokens[i].text.upper() not in ("TABLE", "TABLES"):
        if kind != "truncate":  # TRUNCATE [TABLE] name
            return "other", []
        i -= 1
    i += 1
    while i < len(tokens) and tokens[i].text.upper() in ("IF", "NOT", "EXISTS"):
        i += 1
    names, i = _names_from(tokens, i, default_db)
    if kind in ("drop", "rename"):
        while i < len(tokens) and (tokens[i].token_type == TokenType.COMMA
                                   or tokens[i].text.upper() == "TO"):
            more, i = _names_from(tokens, i + 1, default_db)
            names += more
    return kind, names


def _names_from(tokens: Sequence[Token], i: int, default_db: str) -> tuple[list[str], int]:
    """The ``db.table`` or ``table`` at ``tokens[i]``, and the index after it."""
    if i >= len(tokens):
        return [], i
    parts = [tokens[i].text]
    while (i + 2 < len(tokens) and tokens[i + 1].token_type == TokenType.DOT
           and len(parts) < 2):
        parts.append(tokens[i + 2].text)
        i += 2
    name = f"{parts[0]}.{parts[1]}" if len(parts) == 2 else f"{default_db}.{parts[0]}"
    return [name], i + 1


def parse_renames(query: str) -> dict[str, str]:
    """Column renames in an ALTER TABLE: ``{old: new}`` (RENAME COLUMN and CHANGE)."""
    tree = _tree(_without_column_conditions(query))
    out: dict[str, str] = {}
    if not isinstance(tree, exp.Alter):
        return out
    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.RenameColumn):
            old, new = action.this.name, action.args["to"].name
        elif isinstance(action, exp.AlterColumn | exp.ModifyColumn) and action.args.get(
                "rename_from") is not None:
            old, new = action.args["rename_from"].name, action.this.name
        else:
            continue
        if old != new:
            out[old] = new
    return out


def _without_column_conditions(query: str) -> str:
    """``query`` without MariaDB's modifiers sqlglot's MySQL dialect does not parse
    (``ALTER ONLINE|IGNORE``, ``IF [NOT] EXISTS`` after a column action), cut out by the
    positions of sqlglot's own tokens."""
    tokens = _tokens(query)
    drop: list[Token] = []
    for i, token in enumerate(tokens):
        word = token.text.upper()
        after = tokens[i - 1].text.upper() if i else ""
        if word in ("ONLINE", "IGNORE") and after in ("ALTER", "ONLINE", "IGNORE"):
            drop.append(token)
        elif word == "IF" and after not in ("TABLE", ""):
            j = i + 1 + (i + 1 < len(tokens) and tokens[i + 1].text.upper() == "NOT")
            drop += tokens[i:j + 1]
    for token in sorted(drop, key=lambda t: t.start, reverse=True):
        query = query[:token.start] + " " + query[token.end + 1:]
    return query
