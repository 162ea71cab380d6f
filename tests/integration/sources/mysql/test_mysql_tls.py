"""A mysql source's ``tls`` and ``tls_ca`` (docs/options.md): against a MariaDB serving
TLS with a certificate of a private CA for 127.0.0.1, ``disabled`` talks in the clear,
``required`` encrypts, ``verify`` encrypts only when ``tls_ca`` vouches for the server's
certificate and the certificate names the host connected to; ``tls_ca`` without
``verify`` is refused. (Before: pymysql dropped ``tls_ca`` and the host-name check.)"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from icetide.config import Settings
from icetide.devkit.embedded.mariadb import EmbeddedMariaDB, MariaDBInfo
from icetide.errors import PipelineError
from icetide.sources.mysql.declared import MySqlDeclaration
from icetide.sources.registry import build_source

pytestmark = pytest.mark.mariadb


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certificates(folder: Path) -> None:
    """ca.pem (a private CA) and server.pem/server-key.pem for 127.0.0.1, signed by it."""
    folder.mkdir()
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
             "/CN=icetide test CA", "-keyout", "ca-key.pem", "-out", "ca.pem", cwd=folder)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "server-key.pem", "-out", "server.csr", cwd=folder)
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
             "-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out", "server.pem",
             cwd=folder)


class _TlsMariaDB(EmbeddedMariaDB):
    """The embedded server with TLS on (its certificates in ``certs``)."""

    def __init__(self, data_dir: Path, certs: Path) -> None:
        super().__init__(data_dir)
        self.certs = certs

    def _defaults(self) -> str:
        return super()._defaults() + "".join(
            f"{key}={self.certs / name}\n" for key, name in (
                ("ssl-ca", "ca.pem"), ("ssl-cert", "server.pem"), ("ssl-key", "server-key.pem")))


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MariaDBInfo, Path]]:
    root = tmp_path_factory.mktemp("tls")
    _certificates(root / "certs")
    with _TlsMariaDB(root / "server", root / "certs") as info:
        yield info, root / "certs" / "ca.pem"


def _cipher(info: MariaDBInfo, monkeypatch: pytest.MonkeyPatch, host: str = "127.0.0.1",
            **tls: str) -> str:
    """The TLS cipher of a connection made as the source makes them ('' in the clear)."""
    monkeypatch.setenv("TLS_TEST_PW", info.cdc_password)
    source = build_source("shop", {"type": "mysql", "host": host, "port": info.port,
                                   "user": info.cdc_user, "password_env": "TLS_TEST_PW",
                                   **tls}, Settings())
    assert isinstance(source, MySqlDeclaration)
    conn = pymysql.connect(**source.config.connection)  # type: ignore[arg-type]
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            row = cur.fetchone()
            return str(row[1]) if row else ""
    finally:
        conn.close()


def test_tls_settings_decide_encryption_and_verification(
        tls_server: tuple[MariaDBInfo, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    info, ca = tls_server
    assert _cipher(info, monkeypatch) == ""  # the default: disabled
    assert _cipher(info, monkeypatch, tls="required") != ""
    assert _cipher(info, monkeypatch, tls="verify", tls_ca=str(ca)) != ""
    with pytest.raises(pymysql.err.OperationalError, match="CERTIFICATE_VERIFY_FAILED"):
        _cipher(info, monkeypatch, tls="verify")  # the system's CAs do not know this one
    with pytest.raises(pymysql.err.OperationalError, match="CERTIFICATE_VERIFY_FAILED"):
        # the same server by a name its certificate does not carry
        _cipher(info, monkeypatch, host="localhost", tls="verify", tls_ca=str(ca))
    assert _cipher(info, monkeypatch, host="localhost", tls="required") != ""
    with pytest.raises(PipelineError, match=r"tls_ca .* is only read with tls: verify"):
        _cipher(info, monkeypatch, tls="required", tls_ca=str(ca))
