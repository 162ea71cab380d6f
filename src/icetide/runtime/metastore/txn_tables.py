"""Hive 2.3's transaction tables on PostgreSQL: what Iceberg's commit lock needs.

``datanucleus.schema.autoCreateAll`` creates the metastore's own tables but not these,
and ``TxnDbUtil.prepDb`` writes Derby SQL only. Hive's SQL names them unquoted, so
PostgreSQL folds them to lower case both here and in Hive's queries. Created once,
idempotently (``IF NOT EXISTS``; the counters get their first row only when empty).
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

_ID, _NAME, _PART, _FLAG = "bigint", "varchar(128)", "varchar(767)", "char(1)"

#: table → columns (name, type); ``!`` marks NOT NULL, a trailing ``*`` the primary key.
TABLES: dict[str, list[tuple[str, str]]] = {
    "TXNS": [("TXN_ID*", _ID), ("TXN_STATE!", _FLAG), ("TXN_STARTED!", _ID),
             ("TXN_LAST_HEARTBEAT!", _ID), ("TXN_USER!", _NAME), ("TXN_HOST!", _NAME),
             ("TXN_AGENT_INFO", _NAME), ("TXN_META_INFO", _NAME),
             ("TXN_HEARTBEAT_COUNT", "integer")],
    "TXN_COMPONENTS": [("TC_TXNID", _ID), ("TC_DATABASE!", _NAME), ("TC_TABLE", _NAME),
                       ("TC_PARTITION", _PART), ("TC_OPERATION_TYPE!", _FLAG)],
    "COMPLETED_TXN_COMPONENTS": [("CTC_TXNID", _ID), ("CTC_DATABASE!", _NAME),
                                 ("CTC_TABLE", "varchar(256)"), ("CTC_PARTITION", _PART)],
    "NEXT_TXN_ID": [("NTXN_NEXT!", _ID)],
    "HIVE_LOCKS": [("HL_LOCK_EXT_ID!*", _ID), ("HL_LOCK_INT_ID!*", _ID), ("HL_TXNID", _ID),
                   ("HL_DB!", _NAME), ("HL_TABLE", _NAME), ("HL_PARTITION", _PART),
                   ("HL_LOCK_STATE!", _FLAG), ("HL_LOCK_TYPE!", _FLAG),
                   ("HL_LAST_HEARTBEAT!", _ID), ("HL_ACQUIRED_AT", _ID), ("HL_USER!", _NAME),
                   ("HL_HOST!", _NAME), ("HL_HEARTBEAT_COUNT", "integer"),
                   ("HL_AGENT_INFO", _NAME), ("HL_BLOCKEDBY_EXT_ID", _ID),
                   ("HL_BLOCKEDBY_INT_ID", _ID)],
    "NEXT_LOCK_ID": [("NL_NEXT!", _ID)],
    "COMPACTION_QUEUE": [("CQ_ID*", _ID), ("CQ_DATABASE!", _NAME), ("CQ_TABLE!", _NAME),
                         ("CQ_PARTITION", _PART), ("CQ_STATE!", _FLAG), ("CQ_TYPE!", _FLAG),
                         ("CQ_TBLPROPERTIES", "varchar(2048)"), ("CQ_WORKER_ID", _NAME),
                         ("CQ_START", _ID), ("CQ_RUN_AS", _NAME), ("CQ_HIGHEST_TXN_ID", _ID),
                         ("CQ_META_INFO", "bytea"), ("CQ_HADOOP_JOB_ID", "varchar(32)")],
    "NEXT_COMPACTION_QUEUE_ID": [("NCQ_NEXT!", _ID)],
    "COMPLETED_COMPACTIONS": [("CC_ID*", _ID), ("CC_DATABASE!", _NAME), ("CC_TABLE!", _NAME),
                              ("CC_PARTITION", _PART), ("CC_STATE!", _FLAG),
                              ("CC_TYPE!", _FLAG), ("CC_TBLPROPERTIES", "varchar(2048)"),
                              ("CC_WORKER_ID", _NAME), ("CC_START", _ID), ("CC_END", _ID),
                              ("CC_RUN_AS", _NAME), ("CC_HIGHEST_TXN_ID", _ID),
                              ("CC_META_INFO", "bytea"), ("CC_HADOOP_JOB_ID", "varchar(32)")],
    "AUX_TABLE": [("MT_KEY1!*", _NAME), ("MT_KEY2!*", _ID), ("MT_COMMENT", "varchar(255)")],
    "WRITE_SET": [("WS_DATABASE!", _NAME), ("WS_TABLE!", _NAME), ("WS_PARTITION", _PART),
                  ("WS_TXNID!", _ID), ("WS_COMMIT_ID!", _ID), ("WS_OPERATION_TYPE!", _FLAG)],
}
#: Counters Hive reads with SELECT … FOR UPDATE: one row each, starting at 1.
COUNTERS = {"NEXT_TXN_ID": "NTXN_NEXT", "NEXT_LOCK_ID": "NL_NEXT",
            "NEXT_COMPACTION_QUEUE_ID": "NCQ_NEXT"}


def create_table_sql(table: str, columns: list[tuple[str, str]]) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for one table of :data:`TABLES`."""
    defs, keys = [], []
    for spec, type_ in columns:
        name = spec.rstrip("!*")
        defs.append(f"{name} {type_}{' NOT NULL' if '!' in spec else ''}")
        if spec.endswith("*"):
            keys.append(name)
    if keys:
        defs.append(f"PRIMARY KEY ({', '.join(keys)})")
    return f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(defs)})"


def statements() -> list[str]:
    """Every statement, in order: tables, then the counters' first rows."""
    out = [create_table_sql(t, cols) for t, cols in TABLES.items()]
    out += [f"INSERT INTO {t} SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM {t})" for t in COUNTERS]
    return out


def prepare_postgres(dsn: str, user: str | None, password: str | None) -> None:
    """Create the transaction tables in the metastore's PostgreSQL database."""
    import psycopg2

    conn = psycopg2.connect(dsn, user=user, password=password)
    try:
        with conn, conn.cursor() as cur:
            for statement in statements():
                cur.execute(statement)
    finally:
        conn.close()
    log.info("transaction tables ready in %s", dsn)
