"""``python -m icetide.runtime.metastore ROOT HOST PORT HEAP LOCK_TIMEOUT [DB_URL USER
JARS FALLBACK_PORTS IDLE_TIMEOUT]``.

One service; the PostgreSQL password comes from ``ICETIDE_METASTORE__PASSWORD``.
``JARS``: ``os.pathsep``-joined jars beyond pyspark's (JDBC driver, S3A);
``FALLBACK_PORTS``: comma-separated ports to try when PORT is taken (``0``: any free one);
``IDLE_TIMEOUT``: seconds without clients before it stops (empty: never).

Started detached by :func:`icetide.runtime.metastore.service.ensure_metastore`; users
run ``icetide catalog start`` instead.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from icetide.runtime.metastore.server import ServiceSpec, main
from icetide.runtime.metastore.site import MetastorePaths

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    root, host, port, heap, lock_timeout, database, user, jars, fallback, idle = (
        [*sys.argv[1:11], *[""] * 10])[:10]
    main(ServiceSpec(MetastorePaths(Path(root)), host, int(port), heap, float(lock_timeout),
                     database or None, user or None, extra_jars=jars,
                     fallback_ports=tuple(int(p) for p in fallback.split(",") if p),
                     idle_timeout=float(idle) if idle else None))
