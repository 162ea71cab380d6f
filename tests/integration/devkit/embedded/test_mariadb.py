"""The embedded MariaDB: private data dir, loopback port, CDC settings, users, restart, stop."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pymysql
import pytest

from icetide.devkit.embedded.mariadb import APP_USER, CDC_USER, EmbeddedMariaDB, MariaDBInfo
from icetide.devkit.gen.seed_shop import seed_shop
from icetide.errors import RuntimeSetupError

pytestmark = pytest.mark.mariadb


def variables(conn: pymysql.Connection[Any]) -> dict[str, str]:
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('log_bin', 'binlog_format', "
                    "'binlog_row_image', 'binlog_row_metadata', 'server_id', 'bind_address', "
                    "'port', 'datadir', 'tmpdir')")
        return {str(k): str(v) for k, v in cur.fetchall()}


def check_server_settings(info: MariaDBInfo, datadir: Path) -> None:
    cdc = info.connect("cdc")
    found = variables(cdc)
    assert found["log_bin"] == "ON" and found["binlog_format"] == "ROW"
    assert found["binlog_row_image"] == "FULL" and found["binlog_row_metadata"] == "FULL"
    assert found["server_id"] == "7" and found["bind_address"] == "127.0.0.1"
    assert Path(found["datadir"]).resolve() == datadir.resolve()
    # temporary tables in the server's own directory, not in a /tmp other servers share
    assert Path(found["tmpdir"]).resolve() == datadir.parent.resolve() / "tmp"
    with cdc.cursor() as cur:
        cur.execute("SHOW GRANTS")
        grants = " ".join(r[0] for r in cur.fetchall())
    for privilege in ("SELECT", "RELOAD", "BINLOG MONITOR", "REPLICATION SLAVE"):
        assert privilege in grants
    with pytest.raises(pymysql.err.OperationalError), cdc.cursor() as cur:
        cur.execute("CREATE DATABASE nope")  # the CDC user cannot write
    cdc.close()


def check_seed(info: MariaDBInfo) -> None:
    app = info.connect()
    seed_shop(app)
    with app.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM user_db.products")
        assert cur.fetchone() == (9,)
        cur.execute("SELECT userid, memberLevel FROM user_db.user_member ORDER BY userid")
        assert cur.fetchall() == (("10952", 2), ("513248", 1), ("555655", 3),
                                  ("603670", 5), ("795098", 4))
    app.close()


def test_start_configure_restart_stop(tmp_path: Path) -> None:
    server = EmbeddedMariaDB(tmp_path / "db", server_id=7)
    started = time.monotonic()
    with server as info:
        first_start = time.monotonic() - started
        assert info.host == "127.0.0.1" and info.port == server.port
        check_server_settings(info, tmp_path / "db" / "data")
        check_seed(info)
        password = info.app_password
        pid = server._proc.pid if server._proc else 0
    assert first_start < 60
    assert not Path(f"/proc/{pid}").exists() or "mariadbd" not in Path(
        f"/proc/{pid}/cmdline").read_text(errors="replace")
    with pytest.raises(RuntimeSetupError, match="not running"):
        _ = server.info

    restarted = time.monotonic()
    with server as info:  # same dir: data, users and passwords survive
        assert time.monotonic() - restarted < 30
        assert info.app_password == password and info.app_user == APP_USER
        assert info.cdc_user == CDC_USER
        with info.connect(database="user_db").cursor() as cur:
            cur.execute("SELECT product_price FROM products WHERE productId = '1'")
            assert str(cur.fetchone()[0]) == "11.1100"
    assert oct((tmp_path / "db" / "credentials.json").stat().st_mode)[-3:] == "600"


def test_a_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    with EmbeddedMariaDB(tmp_path / "one") as info:
        other = EmbeddedMariaDB(tmp_path / "two", port=info.port)
        with pytest.raises(RuntimeSetupError, match=rf"port {info.port}"):
            other.start(timeout=60)
        other.stop()


def test_runs_as_the_current_user(tmp_path: Path) -> None:
    server = EmbeddedMariaDB(tmp_path / "db")
    server.root.mkdir(parents=True)
    text = server._defaults()
    assert ("user=root" in text) == (os.geteuid() == 0)
    assert "bind-address=127.0.0.1" in text and "binlog_row_metadata=FULL" in text


def test_no_passwordless_login_and_private_credentials(tmp_path: Path) -> None:
    """No account logs in over TCP without a password; the generated credentials file is
    created owner-only (never world-readable, not even for a moment) in an owner-only dir."""
    server = EmbeddedMariaDB(tmp_path / "db")
    with server as info:
        for user in ("root", "", "mysql", "mariadb.sys"):
            with pytest.raises(pymysql.err.OperationalError):
                pymysql.connect(host="127.0.0.1", port=info.port, user=user, password="",
                                connect_timeout=2).close()
        app = info.connect()
        with app.cursor() as cur:
            cur.execute("SELECT user, host FROM mysql.global_priv "
                        "WHERE COALESCE(JSON_VALUE(priv, '$.authentication_string'), '') = '' "
                        "AND COALESCE(JSON_VALUE(priv, '$.plugin'), '') "
                        "NOT IN ('unix_socket', 'mysql_native_password_invalid', 'invalid')")
            open_accounts = cur.fetchall()
        app.close()
        assert [a for a in open_accounts if a[1] != "localhost"] == []
        creds = tmp_path / "db" / "credentials.json"
        assert creds.stat().st_mode & 0o777 == 0o600
        assert (tmp_path / "db").stat().st_mode & 0o077 == 0
