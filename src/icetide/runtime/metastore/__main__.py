"""``python -m icetide.runtime.metastore ROOT HOST PORT HEAP LOCK_TIMEOUT [DB USER JARS]``.

One service; the PostgreSQL password comes from ``ICETIDE_METASTORE__PASSWORD``.

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
    root, host, port, heap, lock_timeout, database, user, jars = [*sys.argv[1:9], ""][:8]
    main(ServiceSpec(MetastorePaths(Path(root)), host, int(port), heap, float(lock_timeout),
                     database or None, user or None, jars))
