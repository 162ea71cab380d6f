"""The demo's business database: a private MariaDB holding the seed's ``user_db``.

``icetide demo`` runs Debian's ``mariadbd`` under ``<ICETIDE_HOME>/mariadb`` (see
:mod:`icetide.devkit.embedded.mariadb`). On the first start the seed's ``products`` and
``user_member`` rows are loaded; later starts reuse the data, so a second demo resumes
(its CDC flows continue from the binlog position committed in the lake).

Without ``mariadbd`` the demo falls back to ``icetide seed dims`` (the dimension rows
loaded straight into the lake, no CDC): :func:`choose_dims` decides and says why.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pymysql
from pymysql.cursors import Cursor

from icetide.config import Settings
from icetide.devkit.embedded.mariadb import EmbeddedMariaDB, MariaDBInfo
from icetide.devkit.embedded.process import port_in_use
from icetide.devkit.gen.seed_shop import seed_shop
from icetide.errors import RuntimeSetupError

log = logging.getLogger(__name__)

#: The port the demo's MariaDB listens on when it is free (else any free port).
DEMO_MARIADB_PORT = 3306
SHOP_DATABASE = "user_db"
#: The environment variable the pipeline's ``shop`` source reads its password from.
PASSWORD_ENV = "SHOP_PASSWORD"
INSTALL_HINT = "apt-get install mariadb-server"
_PROGRAMS = (("mariadbd", "/usr/sbin/mariadbd"),
             ("mariadb-install-db", "/usr/bin/mariadb-install-db"))

DimsMode = Literal["auto", "cdc", "seed"]


def mariadb_installed() -> bool:
    """Whether Debian's MariaDB server programs are on this machine."""
    return all(shutil.which(name) or Path(path).exists() for name, path in _PROGRAMS)


def choose_dims(requested: DimsMode) -> tuple[Literal["cdc", "seed"], str | None]:
    """The dimension mode to run, and a warning when ``auto`` had to fall back to seed rows."""
    if requested == "seed":
        return "seed", None
    if mariadb_installed():
        return "cdc", None
    if requested == "cdc":
        raise RuntimeSetupError(
            f"--dims cdc needs MariaDB's mariadbd, which is not installed: install it with "
            f"`{INSTALL_HINT}` (or `sudo {INSTALL_HINT}`), or run with --dims seed")
    return "seed", (
        "MariaDB (mariadbd) is not installed: the dimensions are loaded once from the seed "
        "rows (`icetide seed dims`), without CDC and without business updates. Install it "
        f"with `sudo {INSTALL_HINT}` and run `icetide demo` again for the whole system.")


@dataclass(frozen=True)
class Shop:
    """The running business database."""

    info: MariaDBInfo
    seeded: bool  # True when this start created user_db (first demo)
    database: str = SHOP_DATABASE

    def connect(self) -> pymysql.Connection[Cursor]:
        """A new autocommit connection as the application user."""
        return self.info.connect("app")

    def pipeline_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment the clickstream spec is resolved with (``${SHOP_HOST}``, ...).

        Also sets ``$SHOP_PASSWORD`` in this process: the ``shop`` source reads its
        password from there (``password_env``), never from the spec or a log line.
        """
        os.environ[PASSWORD_ENV] = self.info.cdc_password
        env = dict(os.environ if base is None else base)
        env.update({"SHOP_HOST": self.info.host, "SHOP_PORT": str(self.info.port),
                    "SHOP_USER": self.info.cdc_user})
        return env


def database_exists(conn: pymysql.Connection[Cursor], database: str) -> bool:
    """Whether ``database`` exists on the server."""
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s",
                    (database,))
        return cur.fetchone() is not None


def ensure_seeded(info: MariaDBInfo, database: str = SHOP_DATABASE) -> bool:
    """Load the seed's rows unless ``database`` exists (a resumed demo); True if seeded."""
    with contextlib.closing(info.connect("app")) as conn:
        if database_exists(conn, database):
            return False
        seed_shop(conn, database)
    return True


def demo_port(wanted: int | None) -> int | None:
    """``wanted`` when it is free, else ``None`` (EmbeddedMariaDB picks a free port)."""
    if wanted is None or wanted == 0:
        return None
    if port_in_use(wanted):
        log.info("port %d is taken: the demo's MariaDB uses a free port", wanted)
        return None
    return wanted


@contextlib.contextmanager
def shop_database(settings: Settings, port: int | None = DEMO_MARIADB_PORT) -> Iterator[Shop]:
    """Start the demo's MariaDB under ``<home>/mariadb``, seed it once, stop it at the end."""
    server = EmbeddedMariaDB(settings.path("mariadb"), port=demo_port(port))
    with server as info:
        seeded = ensure_seeded(info)
        log.info("demo MariaDB on %s:%d (%s %s)", info.host, info.port, SHOP_DATABASE,
                 "seeded" if seeded else "resumed")
        yield Shop(info, seeded)
