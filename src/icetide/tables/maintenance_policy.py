"""Table maintenance policy and the consumers' retention floor (pure, no JVM).

The policy of one table is ``maintenance:`` of the configuration overlaid with the
table's properties ``icetide.maintenance.<key>`` (so it travels with the table and
``icetide maintain`` needs no pipeline). Expiry keeps every snapshot a flow still needs:
each flow's newest marker on the table, and everything at or after any consumer's
committed position ``{"snapshot": id}`` under the key ``iceberg:<catalog.db.table>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from icetide.config import MaintenanceConfig
from icetide.config.invalid import Loc, dotted, validation_message
from icetide.errors import MaintenanceError, PipelineError
from icetide.model.keys import TableProperties
from icetide.model.source_key import SourceKey

PROPERTY_PREFIX = TableProperties.MAINTENANCE_PREFIX


def table_policy(base: MaintenanceConfig, properties: Mapping[str, str]) -> MaintenanceConfig:
    """``base`` with the table's ``icetide.maintenance.<key>`` properties applied;
    ``enabled`` is refused, as a declaration's ``maintenance={'enabled': ...}`` is: a
    table's own switch would be read by no pass."""
    over: dict[str, object] = {}
    for key, value in properties.items():
        if key.startswith(PROPERTY_PREFIX):
            over[key[len(PROPERTY_PREFIX):].replace("-", "_")] = value
    if not over:
        return base
    if "enabled" in over:
        raise MaintenanceError(
            f"table property {PROPERTY_PREFIX}enabled={over['enabled']!r} is not applied: "
            "maintenance is switched on or off for a whole run (maintenance.enabled in "
            "icetide.yaml), not per table. Remove it: ALTER TABLE ... UNSET TBLPROPERTIES "
            f"('{PROPERTY_PREFIX}enabled')")
    try:
        return MaintenanceConfig.model_validate({**base.model_dump(), **over})
    except ValidationError as exc:
        raise MaintenanceError(validation_message(
            exc, "table properties", key=_property, see="maintenance.* in docs/config.md",
            allowed=(_property((name,)) for name in MaintenanceConfig.model_fields), given=over,
        )) from None


def _property(loc: Loc) -> str:
    """The table property of a policy key: ``orphan_age`` → ``icetide.maintenance.orphan-age``."""
    return PROPERTY_PREFIX + dotted(loc).replace("_", "-")


#: Compaction's strategies: bin-pack, or sort (by an order, or z-order).
Strategy = Literal["binpack", "sort"]


def rewrite_strategy(policy: MaintenanceConfig, table_sorted: bool
                     ) -> tuple[Strategy, str | None]:
    """``(strategy, sort_order)`` of compaction: sort/zorder where declared, else binpack
    (``sort`` with the table's own order when it has one)."""
    if policy.sort_order.strip():
        return "sort", policy.sort_order.strip()
    return ("sort", None) if table_sorted else ("binpack", None)


#: A file below ``target_file_size`` / this is *small*: what a flow's batch writes. A
#: compaction of small files only leaves the files earlier compactions wrote.
SMALL_FILE_DIVISOR = 16


def small_file_bytes(policy: MaintenanceConfig) -> int:
    """Files below this many bytes are the ones a routine compaction rewrites."""
    return max(1, policy.target_file_size // SMALL_FILE_DIVISOR)


def full_size_bytes(policy: MaintenanceConfig) -> int:
    """Files from this size on are full-sized: no compaction selects them (Iceberg's own
    default of ``min-file-size-bytes``, ¾ of the target)."""
    return policy.target_file_size * 3 // 4


def needs_full_compaction(medium_bytes: Iterable[int], policy: MaintenanceConfig) -> bool:
    """Whether a compaction rewrites the *medium* files too (neither small nor full-sized):
    once the medium files of one partition (``medium_bytes``: their bytes per partition)
    add up to a full-sized file. Until then a pass rewrites only the small files, so a
    partition that keeps growing (today's, of a streaming table) is not rewritten whole by
    every pass: each row is rewritten about twice, not once per pass until its file is
    full-sized."""
    return any(total >= policy.target_file_size for total in medium_bytes)


#: File groups of a table smaller than one target file rewritten at once (each is tiny:
#: its Spark job's and commit's fixed costs are most of its time).
SMALL_TABLE_GROUPS = 4


def compaction_options(policy: MaintenanceConfig, deletes_heavy: bool,
                       full: bool = True, table_bytes: int | None = None) -> dict[str, str]:
    """Options of ``rewrite_data_files``: target size, partial progress (each file group
    commits on its own, so a conflict with a writer costs one group, not the pass), and
    one file group at a time: a pass beside a running pipeline takes about one core and
    leaves the others to the flows (a bucketed table has a group per bucket). Not
    ``full``: only files below :func:`small_file_bytes` are rewritten (and files with
    deletes when ``deletes_heavy``). A table of less than one target file
    (``table_bytes``, e.g. a CDC dimension of a few rows in 4 buckets) is rewritten in
    one commit, its groups together: there a Spark job and a commit per group are most of
    the time."""
    options = {
        "target-file-size-bytes": str(policy.target_file_size),
        "min-input-files": str(policy.min_input_files),
        **_commit_options(policy, table_bytes),
    }
    if not full:
        options["min-file-size-bytes"] = str(small_file_bytes(policy))
        options.update(_one_task_groups(policy, table_bytes))
    if deletes_heavy:
        options["delete-ratio-threshold"] = str(policy.delete_ratio)
        options["delete-file-threshold"] = "1"
        # deletes left pointing at rewritten files would count (and be read) forever
        options["remove-dangling-deletes"] = "true"
    return options


def _small_table(policy: MaintenanceConfig, table_bytes: int | None) -> bool:
    """Whether the table holds less than one target file (``None``: not known)."""
    return table_bytes is not None and table_bytes < policy.target_file_size


def _commit_options(policy: MaintenanceConfig, table_bytes: int | None) -> dict[str, str]:
    """Partial progress and file groups at a time of a rewrite (see :func:`compaction_options`)."""
    small_table = _small_table(policy, table_bytes)
    return {
        "partial-progress.enabled": str(not small_table).lower(),
        "partial-progress.max-commits": "10",
        "max-concurrent-file-group-rewrites": str(SMALL_TABLE_GROUPS if small_table else 1),
    }


def _one_task_groups(policy: MaintenanceConfig, table_bytes: int | None) -> dict[str, str]:
    """A routine pass over a table of more than one target file: file groups of at most
    one target file. Each group's Spark job is then one task (it writes one file), so with
    one group at a time the pass holds one core, not all of them: a group of many target
    files is a job of as many tasks, and a flow's next batch would wait for one of them
    to end. Small files fill a group with far more than ``min-input-files`` of them; a
    full pass keeps whole-partition groups, or medium files would never merge."""
    if _small_table(policy, table_bytes):
        return {}
    return {"max-file-group-size-bytes": str(policy.target_file_size)}


def delete_rewrite_options(policy: MaintenanceConfig, table_bytes: int | None = None
                           ) -> dict[str, str]:
    """Options of ``rewrite_position_delete_files``: every delete file (``rewrite-all``:
    it also drops the deletes of data files a compaction rewrote), committed as
    :func:`compaction_options` commits: a table of less than one target file (a CDC
    dimension) in one commit with its groups together, else each group on its own."""
    return {"rewrite-all": "true", **_commit_options(policy, table_bytes)}


def metadata_properties(policy: MaintenanceConfig) -> dict[str, str]:
    """Table properties capping the kept metadata.json files."""
    return {
        "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": str(policy.metadata_versions),
    }


@dataclass(frozen=True)
class FlowMark:
    """One flow's newest marker on one table: its snapshot and its positions."""

    table: str
    flow: str
    snapshot: int
    timestamp_ms: int
    positions: tuple[Mapping[str, object], ...]


def needed_snapshots(table: str, marks: Iterable[FlowMark]) -> dict[int, str]:
    """Snapshots of ``table`` that flows still need → who needs them (for messages)."""
    need: dict[int, str] = {}
    key = str(SourceKey.iceberg(table))
    for mark in marks:
        if mark.table == table:
            need.setdefault(mark.snapshot, f"flow {mark.flow} (its newest marker)")
        for position in mark.positions:
            pos = position.get(key)
            if isinstance(pos, Mapping) and isinstance(pos.get("snapshot"), int):
                need.setdefault(int(pos["snapshot"]),
                                f"flow {mark.flow} (reads {table}, committed to {mark.table})")
    return need


def expiry_cutoff(now_ms: int, policy: MaintenanceConfig,
                  needed_ts: Mapping[int, int]) -> int:
    """Expire snapshots older than this (epoch ms): the retention age, lowered to the
    oldest snapshot a consumer needs unless that is beyond ``max_consumer_lag``."""
    cutoff = now_ms - int(policy.snapshot_retention * 1000)
    floor = (None if policy.max_consumer_lag is None
             else now_ms - int(policy.max_consumer_lag * 1000))
    for ts in needed_ts.values():
        if floor is None or ts >= floor:
            cutoff = min(cutoff, ts)
    return cutoff


def maintenance_properties(sort_order: str | None, overrides: Mapping[str, object] | None
                           ) -> dict[str, str]:
    """Table properties of a declaration's ``sort_order=``/``maintenance=`` (checked
    against ``maintenance.*`` now, so a bad key fails when the pipeline loads)."""
    values: dict[str, object] = dict(overrides or {})
    if sort_order is not None:
        values["sort_order"] = sort_order
    unknown = sorted(set(values) - set(MaintenanceConfig.model_fields))
    if unknown:
        raise PipelineError(
            f"maintenance={{{unknown[0]!r}: ...}}: no such maintenance setting; known: "
            f"{', '.join(MaintenanceConfig.model_fields)}")
    props = {PROPERTY_PREFIX + k.replace("_", "-"): str(v).lower() if isinstance(v, bool)
             else str(v) for k, v in values.items() if v is not None}
    try:
        table_policy(MaintenanceConfig(), props)
    except MaintenanceError as exc:
        raise PipelineError(str(exc)) from None
    return props
