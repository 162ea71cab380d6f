"""The report of each hop: a section for docs/benchmarks.md whose last line is its headline.

Each hop has a row of its own in docs/benchmarks.md (its title); the ODS hop's section and
headline read as they did before the other hops were added.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks.peers.flink.cdc import CdcCheck
from benchmarks.peers.flink.groupby import StatsCheck
from benchmarks.peers.flink.measure import Freshness, RowCheck, Throughput
from benchmarks.peers.flink.rows import Compared
from benchmarks.peers.flink.versions import DEFAULT

TITLE = "Flink peer (benchmarks/peers/flink)"
GROUPBY_TITLE = "Flink peer, the GROUP BY hop (benchmarks/peers/flink)"
CDC_TITLE = "Flink peer, the CDC hop (benchmarks/peers/flink)"
WARMUP = 20_000
BAD_RATIO = 0.01


def _pct(values: list[float | None], q: float) -> float | None:
    seen = [v for v in values if v is not None]
    return float(np.percentile(seen, q)) if seen else None


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def _ratios(ours: Throughput, theirs: Throughput | None, windows: list[Freshness],
            rate: str = "events/s", unit: str = "/s") -> list[str]:
    parts = []
    if theirs is not None:
        parts.append(f"{rate} {_ratio(ours.rate, theirs.rate)}×, CPU-s per 1M "
                     f"{_ratio(ours.cpu_per_million(), theirs.cpu_per_million())}×")
    for w in windows:
        ice, flink = _pct(w.icetide, 50), _pct(w.flink, 50)
        parts.append(f"freshness p50 at {w.rate:,.0f}{unit} {_ratio(ice, flink)}× "
                     f"({_s(ice)} vs {_s(flink)})")
    return parts


def headline(ours: Throughput, theirs: Throughput | None, windows: list[Freshness],
             check: RowCheck) -> str:
    """One line: icetide's figures as multiples of Flink's (events/s: higher is better;
    CPU and freshness: lower is better)."""
    parts = [*_ratios(ours, theirs, windows), "same rows" if check.same else "ROWS DIFFER"]
    return f"icetide vs Flink {DEFAULT.flink} (seed 001's job): " + "; ".join(parts)


def groupby_headline(ours: Throughput, theirs: Throughput | None, windows: list[Freshness],
                     check: StatsCheck) -> str:
    """The GROUP BY hop's ratios, as :func:`headline`'s."""
    same = check.rows.same and check.icetide_views == check.flink_views == check.expected
    parts = [*_ratios(ours, theirs, windows, "clicks/s"), "same rows" if same else "ROWS DIFFER"]
    return f"icetide vs Flink {DEFAULT.flink} (seed 001's GROUP BY): " + "; ".join(parts)


def cdc_headline(snapshot: tuple[Throughput, Throughput | None],
                 binlog: tuple[Throughput, Throughput | None], windows: list[Freshness],
                 check: CdcCheck) -> str:
    """The CDC hop's ratios: snapshot, binlog backlog, freshness."""
    parts = [f"snapshot {p}" for p in _ratios(*snapshot, [], "rows/s")]
    parts += [f"binlog {p}" for p in _ratios(*binlog, [], "changes/s")]
    parts += _ratios(binlog[0], None, windows, unit=" changes/s")
    parts.append("same rows" if check.icetide.same and check.flink.same else "ROWS DIFFER")
    return f"icetide vs Flink {DEFAULT.flink} (seed 001's mysql-cdc): " + "; ".join(parts)


def throughput_table(ours: Throughput, theirs: Throughput | None,
                     counted: str = "valid events timed", rate: str = "events/s") -> str:
    def row(name: str, t: Throughput | None) -> str:
        if t is None:
            return f"| {name} | - | - | - | - (backlog within the first checkpoint) |"
        return (f"| {name} | {t.rows:,} | {t.seconds:.1f} s | {t.rate:,.0f} "
                f"| {t.cpu_per_million():.1f} |")
    return "\n".join([f"| engine | {counted} | seconds | {rate} | CPU-s per 1M |",
                      "| --- | ---: | ---: | ---: | ---: |", row("icetide (Spark)", ours),
                      row(f"Flink {DEFAULT.flink}", theirs)])


def fresh_table(windows: list[Freshness], rate: str = "events/s",
                third: str = "broker") -> str:
    rows = [f"| {rate} | probes: icetide / Flink | icetide p50 / p99 | Flink p50 / p99 "
            f"| cores: icetide / Flink / {third} |", "| ---: | ---: | ---: | ---: | ---: |"]
    for w in windows:
        missing = [sum(v is None for v in lat) for lat in (w.icetide, w.flink)]
        note = f" ({missing[0]}/{missing[1]} missing)" if any(missing) else ""
        rows.append(f"| {w.rate:,.0f} | {len(w.probes)} / {len(w.flink_probes)}{note} "
                    f"| {_s(_pct(w.icetide, 50))} / {_s(_pct(w.icetide, 99))} "
                    f"| {_s(_pct(w.flink, 50))} / {_s(_pct(w.flink, 99))} "
                    f"| {w.cores.get('icetide', 0):.2f} / {w.cores.get('flink', 0):.2f} "
                    f"/ {w.cores.get('broker', 0):.2f} |")
    return "\n".join(rows)


def command(a: argparse.Namespace, hop: str) -> str:
    """The command that runs ``hop`` alone with this run's settings."""
    base = f"python -m benchmarks.peers.flink --hops {hop} --seconds {a.seconds:g} " \
           f"--parallelism {a.parallelism}"
    clicks = (f" --events {a.events} --rates {a.rates} --checkpoint {a.checkpoint:g} "
              f"--trigger {a.trigger:g} --partitions {a.partitions} --broker {a.broker}")
    cdc = (f" --members {a.members} --changes {a.changes} --cdc-rates {a.cdc_rates} "
           f"--cdc-checkpoint {a.cdc_checkpoint:g}")
    return f"`{base}{cdc if hop == 'cdc' else clicks}`"


def ods_body(a: argparse.Namespace, ours: Throughput, theirs: Throughput | None,
             windows: list[Freshness], check: RowCheck) -> str:
    p = DEFAULT
    return f"""Command: {command(a, "ods")}

Peer: Apache Flink {p.flink} (PyFlink, local mini cluster, parallelism {a.parallelism}), \
iceberg-flink-runtime {p.iceberg}, flink-connector-kafka {p.kafka_connector}, products by a \
JDBC lookup ({p.jdbc_connector}) on MariaDB; checkpoint = commit every {a.checkpoint:g} s. \
icetide: the clickstream ODS flow, trigger {a.trigger:g} s. Same topic, same clicks \
({BAD_RATIO:.0%} malformed). How it is built: docs/peers.md.

Backlog ({a.events:,} clicks after a {WARMUP:,}-click warm-up; icetide alone, then Flink \
alone from its first commit):

{throughput_table(ours, theirs)}

Freshness (probe produced → commit that made it visible): each engine alone in a window \
of its own at the rate — icetide with Flink's processes stopped (SIGSTOP), then Flink \
with icetide idle, each caught up first; cores are each engine's own in its window:

{fresh_table(windows)}

Row check: {check.expected:,} valid clicks produced; icetide {check.icetide:,} rows, \
Flink {check.flink:,} rows; keys only in icetide {check.only_icetide}, only in Flink \
{check.only_flink}; every column of every row equal: {'yes' if check.same else 'NO'}.

{headline(ours, theirs, windows, check)}
"""


def _compared(c: Compared, ours: str, theirs: str) -> str:
    return (f"{ours} {c.ours:,} rows, {theirs} {c.theirs:,}; keys only in {ours} "
            f"{c.only_ours}, only in {theirs} {c.only_theirs}, in both but different "
            f"{c.differ}; every column of every row equal: {'yes' if c.same else 'NO'}")


def groupby_body(a: argparse.Namespace, ours: Throughput, theirs: Throughput | None,
                 windows: list[Freshness], check: StatsCheck) -> str:
    return f"""Command: {command(a, "groupby")}

Peer: the seed's `select productId, name, product_price, count(uid) … group by` over its \
ODS table read as a stream (`'streaming'='true', 'monitor-interval'='1s'`), upserted into \
an Iceberg table keyed by productId, checkpoint = commit every {a.checkpoint:g} s, beside \
its ODS job. icetide: flow `dws.count_clicks` into `dws.product_clicks` (primary key \
productId, aggregation `views = sum`) with the ODS flow under the pipeline's scheduler, \
trigger {a.trigger:g} s. Each reads its own ODS table (the same rows: the ODS row check). \
How it is built: docs/peers.md.

Backlog (the whole ODS table as the ODS hop left it, {ours.rows:,} clicks; icetide's \
flow alone, then Flink's job started alone, from its first commit):

{throughput_table(ours, theirs, "clicks timed", "clicks/s")}

Freshness (probe click produced → the statistic's commit that counts it, through each \
engine's ODS): each engine alone in a window of its own at the rate, its ODS flow and \
GROUP BY both running; cores are each engine's own (both flows, both jobs):

{fresh_table(windows)}

Row check: {check.expected:,} clicks in ODS; counted by icetide {check.icetide_views:,}, \
by Flink {check.flink_views:,}; {_compared(check.rows, "icetide", "Flink")}.

{groupby_headline(ours, theirs, windows, check)}
"""


def cdc_body(a: argparse.Namespace, snapshot: tuple[Throughput, Throughput | None],
             binlog: tuple[Throughput, Throughput | None], windows: list[Freshness],
             check: CdcCheck) -> str:
    p = DEFAULT
    return f"""Command: {command(a, "cdc")}

Peer: `mysql-cdc` (flink-sql-connector-mysql-cdc {p.mysql_cdc}, Flink {p.flink}) from \
MariaDB's `user_db.user_member` into an Iceberg table with its primary key (format v2), \
checkpoint = commit every {a.cdc_checkpoint:g} s (the seed's). icetide: the example's CDC \
flow `dim_db.user_member` (`examples/clickstream/dims.py`, `clickstream.dims = cdc`), \
trigger {a.cdc_checkpoint:g} s. The same database, the same binlog. docs/peers.md.

Snapshot ({a.members:,} generated members and the seed's; icetide alone, then Flink \
started alone, from its first commit):

{throughput_table(*snapshot, "rows timed", "rows/s")}

Binlog backlog ({a.changes:,} member updates made while Flink is stopped and icetide idle; \
icetide alone, then Flink continued, from its first commit):

{throughput_table(*binlog, "changes timed", "changes/s")}

Freshness (probe change written → the commit holding it): each engine alone in a window \
of its own while members change at the rate; cores are each engine's own and MariaDB's:

{fresh_table(windows, "changes/s", "MariaDB")}

Row check, both drained, each against MariaDB's {check.source:,} rows: \
{_compared(check.icetide, "icetide", "MariaDB")}. {_compared(check.flink, "Flink", "MariaDB")}.

{cdc_headline(snapshot, binlog, windows, check)}
"""
