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
    tls: required                     # disabled (default) | required | verify
    # tls_ca: /etc/ssl/shop-ca.pem      # with tls: verify, the CA (default: the system's)
```
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, field_validator, model_validator

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
    #: refused: each CDC flow over the source is a replica with an id of its own
    server_id: int | None = None
    drop_policy: Literal["keep", "drop", "fail"] = "keep"
    snapshot_method: Method | None = None
    max_view_age: Duration | None = Field(default=None, gt=0)
    #: Seconds an unreachable server is retried before ``--once`` fails (null: for ever).
    retry_timeout: Duration | None = Field(default=300.0, gt=0)
    #: TLS to the server: ``required`` encrypts, ``verify`` also checks the certificate
    #: against ``tls_ca`` (a CA file; default: the system's CAs) and the host name.
    tls: Literal["disabled", "required", "verify"] = "disabled"
    tls_ca: str | None = None

    @field_validator("server_id")
    @classmethod
    def _no_server_id(cls, v: int | None) -> int | None:
        if v is not None:
            raise ValueError(
                f"server_id {v} is not applied: every CDC flow over the source replicates "
                "with an id of its own, derived from the source and flow names (two replicas "
                "with one id would disconnect each other); drop server_id")
        return v

    @model_validator(mode="after")
    def _ca_for_verify(self) -> Config:
        if self.tls_ca is not None and self.tls != "verify":
            raise ValueError(f"tls_ca {self.tls_ca!r} is only read with tls: verify (the "
                             f"certificate checked against it); set tls: verify or drop tls_ca")
        return self


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
    """pymysql's arguments for ``tls``. ``verify`` goes by its ``ssl_*`` arguments: given
    ``ssl_verify_cert``, pymysql replaces an ``ssl`` dict with one built from them, so a
    CA or host-name check put in the dict would be dropped."""
    if config.tls == "disabled":
        return {"ssl_disabled": True}
    if config.tls == "required":  # encrypted, the certificate not checked
        return {"ssl": {"check_hostname": False}}
    return {"ssl_ca": config.tls_ca, "ssl_verify_cert": True, "ssl_verify_identity": True}


def build(name: str, config: Config, settings: Settings) -> MySqlDeclaration:
    password, missing = _password(name, config)
    connection = {"host": config.host, "port": config.port, "user": config.user,
                  "password": password, "charset": "utf8mb4", **_tls(config)}
    extra = {key: value for key in ("chunk_size", "max_records", "snapshot_method",
                                    "max_view_age")
             if (value := getattr(config, key)) is not None}
    return MySqlDeclaration(MySqlSourceConfig(
        name=name, connection=connection, include=config.include, exclude=config.exclude,
        drop_policy=config.drop_policy, retry_timeout=config.retry_timeout, **extra),
        unusable=missing)
