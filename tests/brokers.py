"""Which broker a Kafka test runs against: the embedded Tansu broker, Apache Kafka, or both.

The session fixture ``broker`` (tests/conftest.py) is Tansu unless a test is marked with
:data:`BOTH` (once per kind: the light tests of the exactly-once, dead-letter and Debezium
families) or :data:`APACHE` (Apache Kafka only: what only a real broker has —
transactions, retention, SASL/SCRAM). Each kind is started once per session. The heavy
e2e tests (kill -9 of the whole pipeline, the Spark cluster) start their own Apache Kafka.
"""

from __future__ import annotations

import secrets

import pytest

from icetide.devkit.embedded.kafka import ScramUser
from icetide.devkit.embedded.kinds import KINDS

#: the SCRAM user of the session's Apache Kafka (a fresh password each session)
SCRAM = ScramUser("icetide-test", secrets.token_urlsafe(16))

BOTH = pytest.mark.parametrize("broker", KINDS, indirect=True)
APACHE = pytest.mark.parametrize("broker", ["kafka"], indirect=True)
