"""Frozen specs of what a pipeline declares: tables, flows, expectations, the pipeline file.

Declaring never executes anything: the decorators in :mod:`icetide.pipelines.api`
build these specs and register them; the runner reads them later. Everything here is
pure Python (no pyspark at runtime) so a pipeline can be loaded and checked without a JVM.

Names are always qualified ``database.table`` once they are in a spec
(:func:`icetide.pipelines.names.qualify_name` turns a user's name into that form).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    PlainValidator,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_validator,
)
from pydantic.dataclasses import dataclass

from icetide.config import Duration
from icetide.config.invalid import Loc, validation_message
from icetide.errors import PipelineError
from icetide.pipelines.names import (
    SourceLocation,
    check_column,
    check_identifier,
    check_stored_column,
    where,
)
from icetide.pipelines.partitioning import PartitionField, parse_partition_cols
from icetide.tables.hudi import check_properties
from icetide.tables.merge_engines import MergeEngine, parse_merge_engine

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

TableKind = Literal["streaming_table", "materialized_view", "temporary_view"]
FlowKind = Literal["append", "auto_cdc", "batch", "view"]
ExpectationAction = Literal["warn", "drop", "fail"]
#: A query function takes no argument (SDP style) or the SparkSession (icetide style).
if TYPE_CHECKING:
    QueryFunction = Callable[..., DataFrame]
else:  # the specs are validated at run time, where pyspark is not imported
    QueryFunction = Callable[..., object]

TABLE_KINDS: tuple[TableKind, ...] = ("streaming_table", "materialized_view", "temporary_view")
FLOW_KINDS: tuple[FlowKind, ...] = ("append", "auto_cdc", "batch", "view")
EXPECTATION_ACTIONS: tuple[ExpectationAction, ...] = ("warn", "drop", "fail")

__all__ = [
    "AutoCdcSpec",
    "Expectation",
    "FlowSpec",
    "PartitionField",
    "PipelineDefaults",
    "PipelineSpec",
    "SourceLocation",
    "TableSpec",
    "call_query",
    "parse_partition_cols",
]


def _frozen_map(value: Mapping[str, object] | None) -> Mapping[str, object]:
    return MappingProxyType(dict(value or {}))


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


#: A mapping stored read-only (a spec is frozen all the way down).
FrozenMap = Annotated[Mapping[str, object], AfterValidator(_frozen_map)]
FrozenStrMap = Annotated[Mapping[str, str], AfterValidator(_frozen_map)]
#: A string with something in it.
Text = Annotated[str, AfterValidator(_not_blank)]
_CONFIG = ConfigDict(arbitrary_types_allowed=True)


class _Validated:
    """What the spec classes share: pydantic validates their fields by their types (the
    rules that span fields are their ``model_validator``s), and a field that fails is a
    :class:`PipelineError` naming the spec, the field, its value and — from the field's
    ``description`` — what to write instead."""

    _what = "spec"

    @classmethod
    def _label(cls, given: Mapping[str, object]) -> str:
        """How an error names the spec being built from ``given`` (its ``name``)."""
        own = given.get("name")
        return f"{cls._what} {own!r}" if isinstance(own, str) and own else cls._what

    @model_validator(mode="wrap")
    @classmethod
    def _pipeline_error(cls, values: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(values)
        except ValidationError as exc:
            raise PipelineError(_describe(cls, values, exc)) from None


def _describe(cls: type[_Validated], values: object, exc: ValidationError) -> str:
    """``exc`` named as the user wrote it: positional arguments by their field's name,
    each field's ``description`` as the fix."""
    names = list(getattr(cls, "__dataclass_fields__", {}))  # in declaration order
    args, kwargs = getattr(values, "args", None) or (), getattr(values, "kwargs", None) or {}
    given = {**dict(zip(names, args, strict=False)), **kwargs}
    fields = getattr(cls, "__pydantic_fields__", {})

    def name(loc: Loc) -> str:
        where = loc[0] if loc else ""
        return names[where] if isinstance(where, int) and where < len(names) else str(where)

    hints = {n: f.description for n, f in fields.items() if f.description}
    written = {**dict(enumerate(args)), **kwargs}
    return validation_message(exc, cls._label(given), key=name, hints=hints, given=written)


# --------------------------------------------------------------------------- expectations
@dataclass(frozen=True, config=_CONFIG)
class Expectation(_Validated):
    """A data-quality rule: rows where ``condition_sql`` is false are kept+counted (warn),
    dropped (drop) or fail the batch (fail)."""

    _what = "expectation"

    name: Text = Field(description="a non-empty string")
    condition_sql: Text = Field(
        description="a SQL boolean expression string, e.g. 'uid IS NOT NULL'")
    action: ExpectationAction = "warn"


# --------------------------------------------------------------------------- helpers
#: A positive :data:`~icetide.config.Duration` or ``None``: the pipelines' durations.
PositiveDuration = Annotated[Duration, Field(gt=0)]
_POSITIVE = TypeAdapter(PositiveDuration | None)


def parse_seconds(value: object, what: str) -> float | None:
    """``"2 minutes"`` → 120.0 (None stays None); a PipelineError naming ``what`` if invalid."""
    try:
        return _POSITIVE.validate_python(value)
    except ValidationError as exc:
        raise PipelineError(validation_message(
            exc, key=lambda _: what, hints={what: "a duration such as '10 seconds'"})) from None


def columns_tuple(values: Sequence[str] | None, what: str) -> tuple[str, ...] | None:
    """A list of column names as a tuple (None stays None); a bare string is an error."""
    if values is None:
        return None
    if isinstance(values, str):
        raise PipelineError(f"{what}={values!r} must be a list of column names: write [{values!r}]")
    return tuple(check_column(v, f"{what} entry") for v in values)


def struct_to_ddl(schema: StructType) -> str:
    """A pyspark ``StructType`` (duck-typed: ``.fields``) as a DDL string, no JVM needed."""
    parts = []
    for f in schema.fields:
        null = "" if f.nullable else " NOT NULL"
        parts.append(f"`{f.name}` {f.dataType.simpleString()}{null}")
    return ", ".join(parts)


def query_arity(func: Callable[..., object], what: str) -> int:
    """0 when ``func`` takes no argument, 1 when it takes the SparkSession; else an error."""
    if not callable(func):
        raise PipelineError(
            f"{what} decorates {func!r}, which is not a function: put it directly above "
            f"a def, e.g. @dp.{what}(name='db.t')"
        )
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return 0
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in params if p.kind in kinds and p.default is inspect.Parameter.empty]
    if len(required) > 1:
        name = getattr(func, "__name__", repr(func))
        raise PipelineError(
            f"query function {name}() takes {len(required)} arguments: it must take none "
            "or only the SparkSession, e.g. def clicks(spark): ..."
        )
    return len(required)


def call_query(func: QueryFunction, spark: SparkSession) -> DataFrame:
    """Run a query function the way it was declared: ``func()`` or ``func(spark)``."""
    if query_arity(func, "query") == 1:
        return func(spark)
    return func()


# --------------------------------------------------------------------------- tables
def _merge_engine(value: object) -> MergeEngine | None:
    """A declared merge engine parsed at declaration (a name such as ``'deduplicate'``, a
    dict, or a spec such as ``dp.aggregation(...)``): a bad one fails there, naming the
    table, as every other option does."""
    if value is None:
        return None
    if isinstance(value, str) and not value.strip():
        raise ValueError("must not be empty: e.g. 'deduplicate'")
    try:
        return parse_merge_engine(cast("MergeEngine | str | Mapping[str, Any]", value))
    except PipelineError as exc:
        # parse_merge_engine's own message may name the option too: once is enough
        raise ValueError(str(exc).removeprefix(f"merge_engine={value!r} ")) from None


@dataclass(frozen=True, config=_CONFIG)
class TableSpec(_Validated):
    """A dataset of the pipeline. ``freshness``/``freshness_warn`` are seconds."""

    _what = "table"

    name: str = Field(description="'db.table'")
    kind: TableKind = "streaming_table"
    comment: str | None = None
    schema: Text | None = Field(default=None, description="a DDL string like 'a INT, b STRING'")
    partition_cols: tuple[PartitionField, ...] = ()
    #: ``partition_cols=[]`` was declared: no partitioning at all, not even a primary-key
    #: table's default buckets (:func:`icetide.engine.targets.partition_sql`)
    unpartitioned: bool = False
    cluster_by: tuple[str, ...] = ()
    table_properties: FrozenStrMap = field(default_factory=dict, hash=False)
    primary_key: tuple[str, ...] | None = None
    #: how rows of one key merge (declared as a name, a dict or a spec: parsed here)
    merge_engine: Annotated[MergeEngine | None, PlainValidator(_merge_engine)] = field(
        default=None, hash=False)
    freshness: PositiveDuration | None = Field(
        default=None, description="positive seconds or a duration such as '10 seconds'")
    freshness_warn: PositiveDuration | None = Field(
        default=None, description="positive seconds or a duration such as '5 seconds'")
    changelog: bool = False
    expectations: tuple[Expectation, ...] = ()
    location: SourceLocation | None = field(default=None, compare=False)
    #: the table format: Iceberg, or Apache Hudi (CDC targets only, docs/cdc.md)
    format: Literal["iceberg", "hudi"] = "iceberg"

    @model_validator(mode="after")
    def _rules(self) -> TableSpec:
        _check_table_name(self)
        _check_table_keys(self)
        _check_table_format(self)
        _check_table_freshness(self)
        _check_table_expectations(self)
        return self

    @property
    def database(self) -> str:
        return self.name.split(".")[0]

    @property
    def is_view(self) -> bool:
        return self.kind == "temporary_view"


def _check_table_name(t: TableSpec) -> None:
    if not isinstance(t.name, str) or len(t.name.split(".")) != 2:
        raise PipelineError(f"{where(t.location)}table name {t.name!r} must be 'db.table'")
    for part in t.name.split("."):
        check_identifier(part, f"{where(t.location)}name part of {t.name!r}:")


def _check_table_format(t: TableSpec) -> None:
    """A Hudi table: a primary-key table, options by Hudi's names, nothing Iceberg-only."""
    if t.format != "hudi":
        return
    if t.primary_key is None or t.kind != "streaming_table":
        raise PipelineError(
            f"{where(t.location)}table {t.name}: format='hudi' is for CDC targets so far: "
            "dp.create_streaming_table(..., primary_key=[...], format='hudi') fed by "
            "create_auto_cdc_flow; declare other tables without format=")
    given = [n for n, v in (("changelog", t.changelog), ("partition_cols", t.partition_cols),
                            ("cluster_by", t.cluster_by), ("merge_engine", t.merge_engine),
                            ("expectations", t.expectations)) if v]
    if given:
        raise PipelineError(
            f"{where(t.location)}table {t.name}: {given[0]} is not applied to a format='hudi' "
            f"table (it is Iceberg-only in icetide so far); drop {given[0]}=")
    check_properties(t.name, t.table_properties, where(t.location))


def _check_table_keys(t: TableSpec) -> None:
    pk = t.primary_key
    if pk is not None:
        if not pk or len(set(pk)) != len(pk):
            raise PipelineError(
                f"{where(t.location)}table {t.name}: primary_key={list(pk)!r} must list "
                "distinct columns, e.g. primary_key=['productId']"
            )
        for col in pk:
            check_stored_column(col, f"table {t.name}: primary_key column")
    if t.merge_engine is not None and pk is None:
        raise PipelineError(
            f"{where(t.location)}table {t.name}: merge_engine={t.merge_engine!r} needs a "
            "primary key: add primary_key=[...]"
        )
    if t.is_view and (pk is not None or t.partition_cols or t.cluster_by or t.changelog):
        raise PipelineError(
            f"{where(t.location)}temporary view {t.name}: primary_key, partitioning, "
            "cluster_by and changelog apply only to stored tables; use @dp.table"
        )


def _check_table_freshness(t: TableSpec) -> None:
    if t.freshness is not None and t.freshness_warn is not None and (
        t.freshness_warn >= t.freshness
    ):
        raise PipelineError(
            f"{where(t.location)}table {t.name}: freshness_warn ({t.freshness_warn:g}s) must "
            f"be below freshness ({t.freshness:g}s): it is the early warning before the target"
        )


def _check_table_expectations(t: TableSpec) -> None:
    names = [e.name for e in t.expectations]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise PipelineError(
            f"{where(t.location)}table {t.name}: expectation name(s) {dupes} are used twice: "
            "give each expectation its own name"
        )


# --------------------------------------------------------------------------- flows
@dataclass(frozen=True, config=_CONFIG)
class AutoCdcSpec(_Validated):
    """What ``create_auto_cdc_flow`` declared: apply a change feed to the target by key.

    ``source`` is a table/view name of the graph (``db.name``) or an opaque icetide
    source object (e.g. a MySQL binlog source) that the runner understands.
    """

    _what = "auto CDC flow"

    source: str | object = field(hash=False)
    keys: tuple[str, ...] = Field(min_length=1, description="at least one column, e.g. ['id']")
    sequence_by: Text = Field(
        description="a column or SQL expression string, e.g. '_binlog_pos'")
    apply_as_deletes: str | None = None
    apply_as_truncates: str | None = None
    column_list: tuple[str, ...] | None = None
    except_column_list: tuple[str, ...] | None = None
    stored_as_scd_type: Literal[1] = Field(
        default=1,
        description="1: icetide keeps SCD type 1; set changelog=True on the target for history")
    ignore_null_updates: bool = False

    @model_validator(mode="after")
    def _one_column_list(self) -> AutoCdcSpec:
        if self.column_list and self.except_column_list:
            raise PipelineError(
                "auto CDC flow: pass column_list or except_column_list, not both"
            )
        return self

    @property
    def source_table(self) -> str | None:
        """The source's table name when the source is a dataset, else None."""
        return self.source if isinstance(self.source, str) else None


@dataclass(frozen=True, config=_CONFIG)
class FlowSpec(_Validated):
    """A flow writing into ``target``. ``inputs`` is None until the runner discovers them."""

    _what = "flow"

    name: str
    target: str
    query: QueryFunction | None = field(default=None, hash=False)
    kind: FlowKind = "append"
    once: bool = False
    cdc: AutoCdcSpec | None = None
    inputs: tuple[str, ...] | None = None
    spark_conf: FrozenStrMap = field(default_factory=dict, hash=False)
    location: SourceLocation | None = field(default=None, compare=False)

    @model_validator(mode="after")
    def _query_or_cdc(self) -> FlowSpec:
        if self.kind == "auto_cdc" and (self.cdc is None or self.query is not None):
            raise PipelineError(f"flow {self.name}: an auto_cdc flow has a cdc spec and no query")
        if self.kind != "auto_cdc" and (self.query is None or self.cdc is not None):
            raise PipelineError(
                f"flow {self.name}: a {self.kind} flow needs a query function and no cdc spec"
            )
        return self

    @property
    def static_inputs(self) -> tuple[str, ...]:
        """Inputs known without running anything (an auto CDC flow's source table)."""
        if self.cdc is not None and self.cdc.source_table is not None:
            return (self.cdc.source_table,)
        return ()


# --------------------------------------------------------------------------- the pipeline file
_DURATION = "a duration such as '30 seconds'"


@dataclass(frozen=True, config=_CONFIG)
class PipelineDefaults(_Validated):
    """``defaults:`` of the pipeline file; durations in seconds."""

    _what = "defaults"

    trigger_interval: PositiveDuration | None = Field(default=None, description=_DURATION)
    freshness: PositiveDuration | None = Field(default=None, description=_DURATION)
    freshness_warn: PositiveDuration | None = Field(default=None, description=_DURATION)
    #: ``maintenance.*`` keys for every table this pipeline's run maintains (between the
    #: config's ``maintenance:`` section and a table's own ``maintenance=``).
    maintenance: FrozenMap = field(default_factory=dict, hash=False)


@dataclass(frozen=True, config=_CONFIG)
class TableOverride(_Validated):
    """One entry of ``tables:`` in the pipeline file: targets that replace what the code
    declares for every table its pattern matches (durations in seconds)."""

    _what = "tables entry"

    freshness: PositiveDuration | None = Field(default=None, description=_DURATION)
    freshness_warn: PositiveDuration | None = Field(default=None, description=_DURATION)


@dataclass(frozen=True, config=_CONFIG)
class PipelineSpec(_Validated):
    """``icetide-pipeline.yml`` (SDP's ``spark-pipeline.yml`` keys plus ``sources``,
    ``defaults`` and ``tables``).

    ``libraries`` are glob patterns relative to the spec file's folder; empty means
    every ``*.py`` of that folder. ``sources`` maps a source name to its settings
    (``{type: kafka, topic: clicktopic}``), interpreted by :mod:`icetide.sources`.
    """

    _what = "pipeline spec"

    @classmethod
    def _label(cls, given: Mapping[str, object]) -> str:
        return str(given.get("path") or cls._what)

    name: Text = Field(description="a non-empty string, e.g. clickstream")
    path: Path | None = None
    catalog: str | None = None
    database: str | None = None
    storage: str | None = None
    libraries: tuple[str, ...] = ()
    configuration: FrozenStrMap = field(default_factory=dict, hash=False)
    sources: Mapping[str, FrozenMap] = field(default_factory=dict, hash=False)
    defaults: PipelineDefaults = PipelineDefaults()
    #: ``tables:``: a table name or a glob over ``db.table`` names → its overrides, in
    #: file order (a later entry wins for a key both set).
    tables: Annotated[Mapping[str, TableOverride], AfterValidator(_frozen_map)] = field(
        default_factory=dict, hash=False)

    @model_validator(mode="after")
    def _names(self) -> PipelineSpec:
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))
        origin = str(self.path) if self.path is not None else "pipeline spec"
        for key, value in (("catalog", self.catalog), ("database", self.database)):
            if value is not None:
                check_identifier(value, f"{origin}: '{key}'")
        for src_name, settings in self.sources.items():
            check_identifier(src_name, f"{origin}: source name")
            if not isinstance(settings.get("type"), str) or not settings["type"]:
                raise PipelineError(
                    f"{origin}: source '{src_name}' needs a 'type', e.g. {{type: kafka, topic: t}}"
                )
        return self

    @property
    def root(self) -> Path:
        """The folder the library globs are relative to."""
        return self.path.parent if self.path is not None else Path.cwd()
