"""A flow's terminal error, kept where every reader of the catalog sees it.

When a flow stops on an error, the engine writes ``icetide.error.<flow>`` (JSON: ``at``
epoch ms and ``message``) into its target table's properties — a metadata update, no
snapshot. ``icetide status`` shows it until the flow commits again (an error older than
the newest commit is history).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import orjson

from icetide.model.keys import TableProperties
from icetide.tables.sql import quote_qualified, sql_string

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)



def record_flow_error(spark: SparkSession, target: str, flow: str, error: BaseException) -> None:
    """Note ``error`` on ``target`` for ``flow`` (best effort: never hides the error)."""
    message = (str(error).strip() or type(error).__name__)[:2000]
    value = orjson.dumps({"at": int(time.time() * 1000), "message": message}).decode()
    try:
        spark.sql(f"ALTER TABLE {quote_qualified(target)} SET TBLPROPERTIES "
                  f"({sql_string(TableProperties.ERROR_PREFIX + flow)} = {sql_string(value)})")
    except Exception as exc:  # the table may be gone or the catalog down: log, go on
        log.warning("could not record the error of flow %s on %s: %s", flow, target, exc)


def flow_errors(properties: Mapping[str, str], since_ms: int | None) -> dict[str, str]:
    """Errors of flows recorded after ``since_ms`` (the newest commit), by flow name."""
    out: dict[str, str] = {}
    for key, value in properties.items():
        if not key.startswith(TableProperties.ERROR_PREFIX):
            continue
        try:
            data = orjson.loads(value)
            at, message = int(data["at"]), str(data["message"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        if since_ms is None or at > since_ms:
            out[key[len(TableProperties.ERROR_PREFIX):]] = message
    return out
