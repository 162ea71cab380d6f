"""``python -m benchmarks.broker``: what one watermark look-up costs the embedded broker.

The embedded broker (Tansu, in memory) keeps every record batch as an object; some requests
list all of a partition's objects. This fills a ``--partitions`` topic step by step
(``--steps`` batches per partition, ``--batch`` messages each) and after each step times
``--calls`` watermark look-ups of the whole topic by both methods of
:class:`icetide.sources.kafka.watermarks.WatermarkClient`, side by side:

* ``fetch`` — a fetch past the end (what the client uses with Tansu);
* ``list`` — ``ListOffsets`` per partition plus a short fetch at the listed end (what it
  uses with Kafka proper, and what it did with Tansu before).

It reports wall milliseconds and broker CPU milliseconds per look-up and checks that both
methods return the same watermarks, equal to the messages produced. Appends the table to
docs/benchmarks.md. Run it on a quiet machine; it takes about a minute.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from benchmarks.cpu import cpu_seconds
from benchmarks.report import append_section
from icetide.devkit.embedded.broker import EmbeddedBroker
from icetide.sources.kafka.watermarks import Method, WatermarkClient

TOPIC = "wm-bench"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.broker", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--steps", default="1000,4000,16000",
                   help="batches per partition after each step, comma-separated")
    p.add_argument("--batch", type=int, default=10, help="messages per record batch")
    p.add_argument("--calls", type=int, default=20, help="look-ups per method and step")
    p.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    return p.parse_args(argv)


def _fill(producer: Producer, partitions: int, batches: int, size: int) -> None:
    """``batches`` record batches of ``size`` messages on every partition."""
    for _ in range(batches):
        for part in range(partitions):
            for _ in range(size):
                producer.produce(TOPIC, b"x" * 190, partition=part)
        producer.flush()


def _time(
    client: WatermarkClient, pid: int, calls: int
) -> tuple[float, float, dict[int, tuple[int, int]]]:
    marks = client.watermarks()
    cpu0, wall0 = cpu_seconds(pid), time.perf_counter()
    for _ in range(calls):
        marks = client.watermarks()
    wall = (time.perf_counter() - wall0) / calls * 1000
    return wall, (cpu_seconds(pid) - cpu0) / calls * 1000, marks


def run(args: argparse.Namespace) -> str:
    rows = ["| batches per partition | fetch: wall ms | fetch: broker CPU ms | list: wall ms "
            "| list: broker CPU ms | list / fetch (CPU) |", "|---:|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory(prefix="icetide-wm-") as tmp:
        broker = EmbeddedBroker(None, tmp)
        broker.start()
        pid = broker.pid
        assert pid is not None
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic(TOPIC, args.partitions, 1)])[TOPIC].result()
            producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0,
                                 "batch.num.messages": args.batch})
            methods: tuple[Method, ...] = ("fetch", "list")
            clients = {m: WatermarkClient(TOPIC, broker.bootstrap, method=m) for m in methods}
            held = 0
            for step in (int(s) for s in args.steps.split(",")):
                _fill(producer, args.partitions, step - held, args.batch)
                held = step
                got = {m: _time(c, pid, args.calls) for m, c in clients.items()}
                rows.append(_row(step, got, args.batch))
                print(rows[-1], flush=True)
        finally:
            broker.stop()
    return "\n".join(rows)


def _row(step: int, got: dict[Method, tuple[float, float, dict[int, tuple[int, int]]]],
         size: int) -> str:
    expected = {p: (0, step * size) for p in got["fetch"][2]}
    for method, (_, _, marks) in got.items():
        if marks != expected:
            raise SystemExit(f"{method}: watermarks {marks}, expected {expected}")
    (fw, fc, _), (lw, lc, _) = got["fetch"], got["list"]
    return (f"| {step:,} | {fw:.1f} | {fc:.1f} | {lw:.1f} | {lc:.1f} "
            f"| {lc / fc if fc else float('inf'):.1f} |")


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    table = run(args)
    if not args.no_doc:
        body = (f"`python -m benchmarks.broker --partitions {args.partitions} --steps "
                f"{args.steps} --batch {args.batch} --calls {args.calls}`: one watermark "
                "look-up of the whole topic, per method, against the embedded broker "
                "(Tansu 0.6, in memory). Both methods returned the produced counts.\n\n"
                + table)
        print(f"appended to {append_section('Embedded broker: watermark look-ups', body)}")


if __name__ == "__main__":
    main()
