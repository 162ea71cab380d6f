"""Build sources from a pipeline's ``sources:`` section.

```yaml
sources:
  clicks: {type: kafka, topic: clicktopic}          # bootstrap: settings.kafka / embedded
```
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icetide.config import Settings
from icetide.errors import PipelineError
from icetide.sources.base import Source

_KAFKA_KEYS = frozenset({"type", "topic", "bootstrap"})


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
    raise PipelineError(
        f"source {name!r} has type {kind!r}; supported: 'kafka' (mysql and debezium follow)"
    )
