"""``{type: mysql, host, port, user, password_env, ...}``: a MySQL/MariaDB server followed
by binlog CDC (each CDC flow builds its own reader from this declaration).

```yaml
sources:
  shop:
    type: mysql
    host: 127.0.0.1
    port: 3306
    user: icetide_cdc
    password_env: SHOP_PASSWORD       # the password comes from this environment variable
    include: ['user_db\\..*']         # regexes over db.table (default: all)
    chunk_size: 10000                 # snapshot rows per SELECT
    max_records: 100000               # rows/changes per micro-batch
    drop_policy: keep                 # DROP COLUMN upstream: keep|drop|fail
    tls: required                     # disabled (default on loopback) | required | verify
```
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field

from icetide.config import Duration, Settings
from icetide.sources.mysql.declared import MySqlDeclaration
from icetide.sources.mysql.snapshot import Method
from icetide.sources.mysql.source import MySqlSourceConfig
from icetide.sources.registry import SourceConfig


class Config(SourceConfig):
    host: str
    user: str
    port: int = Field(default=3306, ge=1, le=65535)
    password_env: str | None = None
    include: tuple[str, ...] = (".*",)
    exclude: tuple[str, ...] = ()
    chunk_size: int | None = Field(default=None, ge=1)
    max_records: int | None = Field(default=None, ge=1)
    server_id: int | None = Field(default=None, ge=1)
    drop_policy: Literal["keep", "drop", "fail"] = "keep"
    snapshot_method: Method | None = None
    max_view_age: Duration | None = Field(default=None, gt=0)
    #: TLS to the server: ``required`` encrypts, ``verify`` also checks the certificate
    #: against ``tls_ca`` (a CA file) and the host name.
    #: Seconds an unreachable server is retried before ``--once`` fails (null: for ever).
    retry_timeout: Duration | None = Field(default=300.0, gt=0)
    tls: Literal["disabled", "required", "verify"] = "disabled"
    tls_ca: str | None = None


def _password(name: str, config: Config) -> tuple[str, str | None]:
    """The password, and the error to raise when a flow uses the source without one."""
    if config.password_env is None:
        return "", None
    value = os.environ.get(config.password_env)
    if value is None:  # an error only if a CDC flow follows the source (see follow())
        return "", (f"source {name!r}: password_env={config.password_env!r} but that "
                    "environment variable is not set; export it before the run")
    return value, None


def _tls(config: Config) -> dict[str, object]:
    if config.tls == "disabled":
        return {"ssl_disabled": True}
    ssl: dict[str, object] = {"check_hostname": config.tls == "verify"}
    if config.tls_ca:
        ssl["ca"] = config.tls_ca
    return {"ssl": ssl, "ssl_verify_cert": config.tls == "verify"}


def build(name: str, config: Config, settings: Settings) -> MySqlDeclaration:
    password, missing = _password(name, config)
    connection = {"host": config.host, "port": config.port, "user": config.user,
                  "password": password, "charset": "utf8mb4", **_tls(config)}
    extra = {key: value for key in ("chunk_size", "max_records", "server_id",
                                    "snapshot_method", "max_view_age")
             if (value := getattr(config, key)) is not None}
    return MySqlDeclaration(MySqlSourceConfig(
        name=name, connection=connection, include=config.include, exclude=config.exclude,
        drop_policy=config.drop_policy, retry_timeout=config.retry_timeout, **extra),
        unusable=missing)
