"""``kafka.properties`` (librdkafka names, as the planner's confluent-kafka takes them)
as options of Spark's Kafka source (Java client names, each prefixed ``kafka.``).

Most names agree; SASL credentials do not: librdkafka's ``sasl.username`` and
``sasl.password`` become the Java client's ``sasl.jaas.config`` (``ScramLoginModule``
for ``SCRAM-SHA-256``/``-512``, ``PlainLoginModule`` for ``PLAIN``). A CA bundle
(``ssl.ca.location``) becomes a PEM trust store. Security settings with no Java
counterpart here are refused (reading without them would fail or be less safe); other
librdkafka-only settings (tuning) are dropped with a warning. ``isolation.level`` is
``read_committed`` unless set, as librdkafka's default is: records of aborted
transactions never reach a batch.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from icetide.errors import ConfigError

log = logging.getLogger(__name__)

#: Same name, same meaning in both clients.
SAME = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.kerberos.service.name", "ssl.key.password",
    "client.id", "client.rack", "request.timeout.ms", "session.timeout.ms", "fetch.min.bytes",
    "fetch.max.bytes", "reconnect.backoff.ms", "reconnect.backoff.max.ms", "retry.backoff.ms",
    "metadata.max.age.ms", "connections.max.idle.ms", "isolation.level",
    "socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms",
})
#: librdkafka name → Java name.
RENAMED = {"sasl.mechanisms": "sasl.mechanism", "fetch.wait.max.ms": "fetch.max.wait.ms",
           "fetch.message.max.bytes": "max.partition.fetch.bytes"}
#: Reader internals Spark's source sets itself (or refuses): never passed on.
INTERNAL = frozenset({"group.id", "enable.auto.commit", "enable.auto.offset.store",
                      "auto.offset.reset", "bootstrap.servers"})
_LOGIN = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
          "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
          "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}
_CREDENTIALS = ("sasl.username", "sasl.password")
_warned: set[frozenset[str]] = set()  # ignored settings already named in a warning


def java_options(bootstrap: str, properties: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options of Spark's Kafka source for ``properties``."""
    java: dict[str, str] = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
    dropped: list[str] = []
    for name, value in properties.items():
        if name in SAME:
            java[name] = value
        elif name in RENAMED:
            java[RENAMED[name]] = value
        elif name == "ssl.ca.location":
            java.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": value})
        elif name == "ssl.endpoint.identification.algorithm":
            java[name] = "" if value.lower() == "none" else value
        elif name in INTERNAL or name in _CREDENTIALS:
            continue
        elif name.startswith(("sasl.", "ssl.")):
            raise ConfigError(
                f"kafka.properties {name!r} has no counterpart in the Java Kafka client of "
                "Spark's Kafka source (kafka.reader=jvm): set kafka.reader=python "
                "(ICETIDE_KAFKA__READER=python) to read with librdkafka, or drop it")
        else:
            dropped.append(name)
    if dropped and frozenset(dropped) not in _warned:  # once, not on every status poll
        _warned.add(frozenset(dropped))
        log.warning("kafka.properties %s are librdkafka settings without a Java client "
                    "counterpart: kafka.reader=jvm ignores them", ", ".join(sorted(dropped)))
    if "security.protocol" in java:
        java["security.protocol"] = java["security.protocol"].upper()
    java.update(_jaas(java.get("sasl.mechanism"), properties))
    return {f"kafka.{k}": v for k, v in java.items()}


def _jaas(mechanism: str | None, properties: Mapping[str, str]) -> dict[str, str]:
    """``sasl.jaas.config`` for librdkafka's ``sasl.username``/``sasl.password``."""
    if not any(name in properties for name in _CREDENTIALS):
        return {}
    module = _LOGIN.get((mechanism or "").upper())
    if module is None:
        raise ConfigError(
            f"kafka.properties sasl.username/sasl.password need sasl.mechanism PLAIN, "
            f"SCRAM-SHA-256 or SCRAM-SHA-512 with kafka.reader=jvm, got {mechanism!r}: "
            "fix sasl.mechanism or set kafka.reader=python")
    user = _quoted(properties.get("sasl.username", ""))
    password = _quoted(properties.get("sasl.password", ""))
    return {"sasl.jaas.config": f"{module} required username={user} password={password};"}


def _quoted(value: str) -> str:
    """A JAAS option value: double-quoted, backslashes and quotes escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
