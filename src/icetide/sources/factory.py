"""Build sources from a pipeline's ``sources:`` section.

```yaml
sources:
  clicks: {type: kafka, topic: clicktopic}          # bootstrap: settings.kafka / embedded
  shop:                                             # MySQL / MariaDB binlog CDC
    type: mysql
    host: 127.0.0.1
    port: 3306
    user: icetide_cdc
    password_env: SHOP_CDC_PASSWORD                 # or password: ... (not recommended)
    include: ['user_db\\..*']                       # regexes over db.table (default: all)
    chunk_size: 10000                               # snapshot rows per SELECT
    max_records: 100000                             # rows/changes per micro-batch
    drop_policy: keep                               # DROP COLUMN upstream: keep|drop|fail
```
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from icetide.config import Settings
from icetide.errors import PipelineError
from icetide.model.source import Source

_KAFKA_KEYS = frozenset({"type", "topic", "bootstrap"})
_MYSQL_KEYS = frozenset({"type", "host", "port", "user", "password", "password_env", "include",
                         "exclude", "chunk_size", "max_records", "drop_policy", "server_id",
                         "snapshot_method", "max_view_age"})
_MYSQL_INTS = ("chunk_size", "max_records", "server_id")
_DEBEZIUM_KEYS = frozenset({"type", "topic", "bootstrap", "table", "primary_key", "columns"})


def build_source(name: str, cfg: Mapping[str, Any], settings: Settings) -> Source:
    """The source named ``name`` in a pipeline, configured by ``cfg``."""
    kind = cfg.get("type")
    if kind == "kafka":
        unknown = sorted(set(cfg) - _KAFKA_KEYS)
        if unknown or "topic" not in cfg:
            raise PipelineError(
                f"source {name!r}: kafka sources take {sorted(_KAFKA_KEYS)} and need 'topic'"
                + (f"; unknown keys {unknown}" if unknown else "")
            )
        from icetide.sources.kafka import KafkaSource

        return KafkaSource(str(cfg["topic"]), settings.kafka, bootstrap=cfg.get("bootstrap"))
    if kind == "mysql":
        return build_mysql_source(name, cfg)
    if kind == "debezium":
        return build_debezium_source(name, cfg, settings)
    raise PipelineError(
        f"source {name!r} has type {kind!r}; supported: 'kafka', 'mysql', 'debezium'"
    )


def build_debezium_source(name: str, cfg: Mapping[str, Any], settings: Settings) -> Source:
    """A Debezium change topic: ``{type: debezium, topic, table, primary_key, columns}``."""
    from icetide.sources.debezium.source import DebeziumConfig, DebeziumSource, columns_from
    from icetide.sources.kafka import KafkaSource

    unknown = sorted(set(cfg) - _DEBEZIUM_KEYS)
    missing = sorted({"topic", "table", "primary_key", "columns"} - set(cfg))
    if unknown or missing:
        raise PipelineError(f"source {name!r}: debezium sources take {sorted(_DEBEZIUM_KEYS)}"
                            f"; missing {missing}, unknown {unknown}")
    config = DebeziumConfig(name, str(cfg["table"]), columns_from(name, cfg["columns"]),
                            _list(name, cfg, "primary_key", ()))
    kafka = KafkaSource(str(cfg["topic"]), settings.kafka, bootstrap=cfg.get("bootstrap"))
    return DebeziumSource(config, kafka)


def _password(name: str, cfg: Mapping[str, Any]) -> tuple[str, str | None]:
    """The password, and the error to raise when a flow uses the source without one."""
    env = cfg.get("password_env")
    if env is None:
        return str(cfg.get("password", "")), None
    value = os.environ.get(str(env))
    if value is None:  # an error only if a CDC flow follows the source (see follow())
        return "", (f"source {name!r}: password_env={env!r} but that environment "
                    "variable is not set; export it or use `password:`")
    return value, None


def _list(name: str, cfg: Mapping[str, Any], key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = cfg.get(key, default)
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise PipelineError(f"source {name!r}: {key}={value!r} must be a list of strings, "
                            r"e.g. ['user_db\..*'] or ['productId']")
    return tuple(value)


def build_mysql_source(name: str, cfg: Mapping[str, Any]) -> Source:
    """The declaration of a MySQL server (each CDC flow builds its own reader from it)."""
    from icetide.sources.mysql.declared import MySqlDeclaration
    from icetide.sources.mysql.source import MySqlSourceConfig

    unknown = sorted(set(cfg) - _MYSQL_KEYS)
    if unknown or "host" not in cfg or "user" not in cfg:
        raise PipelineError(
            f"source {name!r}: mysql sources take {sorted(_MYSQL_KEYS)} and need host and user"
            + (f"; unknown keys {unknown}" if unknown else ""))
    password, missing = _password(name, cfg)
    connection = {"host": str(cfg["host"]), "port": _int(name, cfg, "port", 3306),
                  "user": str(cfg["user"]), "password": password,
                  "charset": "utf8mb4", "ssl_disabled": True}
    extra: dict[str, Any] = {k: _int(name, cfg, k, 0) for k in _MYSQL_INTS if k in cfg}
    if cfg.get("drop_policy", "keep") not in ("keep", "drop", "fail"):
        raise PipelineError(f"source {name!r}: drop_policy={cfg['drop_policy']!r} must be "
                            "keep (default), drop or fail")
    for key in ("drop_policy", "snapshot_method"):
        if key in cfg:
            extra[key] = str(cfg[key])
    if "max_view_age" in cfg:
        extra["max_view_age"] = float(cfg["max_view_age"])
    return MySqlDeclaration(MySqlSourceConfig(
        name=name, connection=connection, include=_list(name, cfg, "include", (".*",)),
        exclude=_list(name, cfg, "exclude", ()), **extra), unusable=missing)


def _int(name: str, cfg: Mapping[str, Any], key: str, default: int) -> int:
    value = cfg.get(key, default)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise PipelineError(f"source {name!r}: {key}={value!r} must be an integer") from None
