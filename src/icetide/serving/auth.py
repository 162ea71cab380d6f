"""User name and password for the SQL server: who may bind where, and the check itself.

HiveServer2 checks passwords only through a class implementing
``org.apache.hive.service.auth.PasswdAuthenticationProvider`` that it instantiates by name
(``hive.server2.authentication=CUSTOM``); none that compares with a configured password
ships with Spark (LDAP and PAM need a directory server or a native library). So icetide
compiles the 40-line Java class below once with ``javac`` into
``$ICETIDE_HOME/cache/sql-server/`` (keyed by a hash of its source and the JDK; never
committed), adds it to the running session (``ADD JAR``) and hands it, over py4j, a random
salt and the salted SHA-256 digests of the user name and password. The password itself
never enters the JVM, a Spark conf, a system property or a log; digests are compared in
constant time (``MessageDigest.isEqual``), user and password both, always.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import SecretStr

from icetide.config import Settings, SqlServerConfig
from icetide.errors import ConfigError, RuntimeSetupError
from icetide.runtime.jars import pyspark_jars_dir
from icetide.runtime.java import check_java
from icetide.runtime.loopback import is_loopback

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

PASSWORD_ENV = "ICETIDE_SQL_SERVER__PASSWORD"
AUTH_CLASS = "icetide.serving.PasswordAuthenticator"
CUSTOM_CLASS_PROPERTY = "hive.server2.custom.authentication.class"

JAVA_SOURCE = """\
package icetide.serving;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import javax.security.sasl.AuthenticationException;
import org.apache.hive.service.auth.PasswdAuthenticationProvider;

/** HiveServer2 CUSTOM authentication against salted digests set by icetide over py4j. */
public final class PasswordAuthenticator implements PasswdAuthenticationProvider {
  private static volatile byte[][] expected; // salt, user digest, password digest

  public static void configure(byte[] salt, byte[] userDigest, byte[] passwordDigest) {
    expected = new byte[][] {salt.clone(), userDigest.clone(), passwordDigest.clone()};
  }

  static byte[] digest(byte[] salt, String value) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      md.update(salt);
      return md.digest(value == null ? new byte[0] : value.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void Authenticate(String user, String password) throws AuthenticationException {
    byte[][] want = expected;
    if (want == null) {
      throw new AuthenticationException("icetide: no password configured");
    }
    boolean userOk = MessageDigest.isEqual(want[1], digest(want[0], user));
    boolean passwordOk = MessageDigest.isEqual(want[2], digest(want[0], password));
    if (!(userOk & passwordOk)) {
      throw new AuthenticationException("wrong user name or password for " + user);
    }
  }
}
"""


def check_exposure(config: SqlServerConfig, host: str) -> None:
    """Refuse to serve the lake beyond this machine without a password."""
    if config.password is None and not is_loopback(host):
        raise ConfigError(
            f"the SQL server would accept anyone on {host!r} without a password: set "
            f"{PASSWORD_ENV} (clients log in as user {config.user!r}, sql_server.user), "
            "or bind to 127.0.0.1"
        )
    if config.password is not None and not config.password.get_secret_value():
        raise ConfigError(f"{PASSWORD_ENV} is empty: set a password, or unset it")


def _javac() -> Path:
    java = check_java()
    beside = java.executable.parent / "javac"
    if beside.is_file():
        return beside
    found = shutil.which("javac")
    if found is None:
        raise RuntimeSetupError(
            f"password authentication for the SQL server compiles a small Java class once "
            f"and needs javac, which is not next to {java.executable} nor on PATH: install "
            "a JDK (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME to one"
        )
    return Path(found)


def _thriftserver_jar() -> Path:
    jars = sorted(pyspark_jars_dir().glob("spark-hive-thriftserver_*.jar"))
    if not jars:
        raise RuntimeSetupError(
            f"no spark-hive-thriftserver jar in {pyspark_jars_dir()}: reinstall pyspark "
            "(pip install --force-reinstall pyspark==3.5.9)"
        )
    return jars[0]


def authenticator_jar(settings: Settings) -> Path:
    """The compiled password check as a jar under ``$ICETIDE_HOME/cache/sql-server``."""
    api = _thriftserver_jar()
    key = hashlib.sha256(f"{JAVA_SOURCE}\0{api.name}".encode()).hexdigest()[:16]
    cache = settings.path("cache", "sql-server")
    jar = cache / f"icetide-sql-auth-{key}.jar"
    if jar.is_file():
        return jar
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        src = Path(tmp, "src", *AUTH_CLASS.split(".")[:-1], "PasswordAuthenticator.java")
        src.parent.mkdir(parents=True)
        src.write_text(JAVA_SOURCE)
        out = Path(tmp, "classes")
        cmd = [str(_javac()), "--release", "17", "-nowarn", "-d", str(out), "-cp", str(api),
               str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise RuntimeSetupError(
                f"javac could not compile the SQL server's password check ({' '.join(cmd)}): "
                f"{proc.stderr.strip()[:500]}; check that the JDK is version 17 or newer"
            )
        staged = Path(tmp, jar.name)
        with zipfile.ZipFile(staged, "w") as zf:
            for path in sorted(out.rglob("*.class")):
                zf.write(path, path.relative_to(out).as_posix())
        os.replace(staged, jar)
    log.info("compiled the SQL server's password check into %s", jar)
    return jar


def install_authenticator(spark: SparkSession, jar: Path, user: str, password: SecretStr) -> None:
    """Load the password check into the running JVM and give it the salted digests.

    ``spark`` is the SparkSession the server starts from: ``ADD JAR`` puts the class in the
    session's class loader, which the server's threads inherit from this thread.
    """
    spark.sql(f"ADD JAR '{jar}'")
    jvm = spark._jvm
    assert jvm is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        cls = jvm.java.lang.Class.forName(AUTH_CLASS, True, loader)
    except Exception as exc:
        raise RuntimeSetupError(
            f"the SQL server's password check {AUTH_CLASS} is not loadable from {jar}: {exc}; "
            f"delete {jar.parent} so it is compiled again"
        ) from exc
    salt = secrets.token_bytes(16)

    def digest(value: str) -> bytearray:
        return bytearray(hashlib.sha256(salt + value.encode()).digest())

    configure = jvm.icetide.serving.PasswordAuthenticator.configure
    configure(bytearray(salt), digest(user), digest(password.get_secret_value()))
    jvm.java.lang.System.setProperty(CUSTOM_CLASS_PROPERTY, cls.getName())
    log.info("SQL server: user %r must log in with the password from %s", user, PASSWORD_ENV)
