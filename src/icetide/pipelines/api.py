"""The declarative API, mirroring Spark Declarative Pipelines (``pyspark.pipelines``, 4.1).

Names and argument order follow SDP (``table``, ``materialized_view``, ``temporary_view``,
``create_streaming_table``, ``append_flow``) and Databricks (``create_auto_cdc_flow``,
``expect*``, ``read``/``read_stream``). icetide's additions are keyword-only and come
after SDP's: ``primary_key``, ``merge_engine``, ``freshness``, ``freshness_warn``,
``changelog``, ``expectations``, ``sort_order``, ``maintenance``. What SDP has and icetide
does not apply is refused with the reason, never accepted and ignored: a flow's
``spark_conf``, ``once=True``, ``temporary_view``, SCD type 2 (docs/options.md). Expectation
decorators are in :mod:`icetide.pipelines.expectations`, ``read``/``read_stream`` in
:mod:`icetide.pipelines.reader`.

Declaring never executes anything: each call builds a frozen spec and registers it in
the active :class:`~icetide.pipelines.registry.GraphRegistry`. One deliberate difference
from SDP: the decorators return the decorated function (SDP returns None), so
expectation decorators can be stacked on either side and tests can call the function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal, TypedDict, TypeVar, Unpack, cast, overload

from icetide.errors import PipelineError
from icetide.pipelines.names import SourceLocation, caller_location, check_column, located
from icetide.pipelines.partitioning import parse_partition_cols
from icetide.pipelines.registry import (
    EXPECTATIONS_ATTR,
    GraphRegistry,
    active_registry,
)
from icetide.pipelines.spec import (
    AutoCdcSpec,
    Expectation,
    FlowKind,
    FlowSpec,
    QueryFunction,
    TableKind,
    TableSpec,
    columns_tuple,
    parse_seconds,
    query_arity,
    struct_to_ddl,
)
from icetide.tables.maintenance_policy import maintenance_properties
from icetide.tables.merge_engines import MergeEngine

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

_F = TypeVar("_F", bound=QueryFunction)

_FLOW_KIND: dict[TableKind, FlowKind] = {
    "streaming_table": "append", "materialized_view": "batch", "temporary_view": "view",
}
_API_NAME: dict[TableKind, str] = {
    "streaming_table": "table", "materialized_view": "materialized_view",
    "temporary_view": "temporary_view",
}


class _Described(TypedDict, total=False):
    comment: str | None
    expectations: Sequence[Expectation] | None


class ViewOptions(_Described, total=False):
    """The keywords of ``temporary_view``."""

    name: str | None
    spark_conf: Mapping[str, str] | None


class StoredOptions(_Described, total=False):
    """The keywords of ``create_streaming_table``: a stored table's, SDP's then icetide's."""

    table_properties: Mapping[str, str] | None
    partition_cols: Sequence[str] | None
    cluster_by: Sequence[str] | None
    schema: StructType | str | None
    format: str | None
    primary_key: Sequence[str] | None
    merge_engine: MergeEngine | str | Mapping[str, object] | None
    freshness: str | float | None
    freshness_warn: str | float | None
    changelog: bool
    sort_order: str | None
    maintenance: Mapping[str, object] | None


class TableOptions(StoredOptions, ViewOptions, total=False):
    """The keywords of ``@dp.table`` and ``@dp.materialized_view``: each option of a
    dataset is declared once, in these classes."""


def _checked(api: str, options: Mapping[str, object], allowed: type) -> Mapping[str, object]:
    """``options``, or a PipelineError naming the first keyword ``api`` does not take."""
    known = allowed.__annotations__.keys()
    unknown = sorted(set(options) - known)
    if unknown:
        raise PipelineError(f"{api}() got an unknown argument {unknown[0]!r}; it takes "
                            f"{', '.join(sorted(known))}")
    return options


def _str_dict(value: Mapping[str, str] | None, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise PipelineError(f"{what}={value!r} must be a dict of strings, e.g. {{'k': 'v'}}")
    return dict(value)


def _flow_conf(value: Mapping[str, str] | None) -> dict[str, str]:
    """SDP's per-flow ``spark_conf``: refused when given — the flows of a run share one
    SparkSession, so a flow's own settings would leak into the others'."""
    conf = _str_dict(value, "spark_conf")
    if conf:
        raise PipelineError(
            f"spark_conf={conf!r} is not applied per flow: a run's flows share one "
            "SparkSession. Set it for the whole run under spark.conf in icetide.yaml "
            "(docs/config.md)")
    return conf


def _schema_ddl(schema: StructType | str | None) -> str | None:
    if schema is None or isinstance(schema, str):
        return schema
    if hasattr(schema, "fields"):
        return struct_to_ddl(schema)
    raise PipelineError(f"schema={schema!r} must be a DDL string ('a INT, b STRING') or StructType")


def _expectations(func: Callable[..., object] | None, args: StoredOptions
                  ) -> tuple[Expectation, ...]:
    given = tuple(args.get("expectations") or ())
    for e in given:
        if not isinstance(e, Expectation):
            raise PipelineError(
                f"expectations entry {e!r} must be an Expectation(name, condition_sql, action)"
            )
    parked: tuple[Expectation, ...] = getattr(func, EXPECTATIONS_ATTR, ()) if func else ()
    return parked + given


def _per_table(maintenance: Mapping[str, object] | None) -> Mapping[str, object] | None:
    """A table's ``maintenance=`` overrides; ``enabled`` is refused: a run's maintenance
    is switched on or off as a whole, and a table's own switch is not read."""
    if maintenance is not None and "enabled" in maintenance:
        raise PipelineError(
            f"maintenance={{'enabled': {maintenance['enabled']!r}}} is not applied per table: "
            "a run maintains every table it writes or none. Set maintenance.enabled in "
            "icetide.yaml or defaults.maintenance.enabled in the pipeline file")
    return maintenance


#: ``format=`` values (SDP's default is Delta; icetide's Iceberg)
FORMATS: dict[str, Literal["iceberg", "hudi"]] = {"iceberg": "iceberg", "hudi": "hudi"}


def _build_table(
    kind: TableKind, name: str, func: Callable[..., object] | None, args: StoredOptions,
    registry: GraphRegistry, location: SourceLocation,
) -> TableSpec:
    given = args.get("format") or "iceberg"
    if given not in FORMATS:
        raise PipelineError(f"format={given!r}: icetide tables are Iceberg, or Hudi "
                            "for CDC targets: write format='hudi', or drop format=")
    table_format = FORMATS[given]
    partition_cols = args.get("partition_cols")
    return TableSpec(
        name=registry.qualify(name, location),
        kind=kind,
        comment=args.get("comment"),
        schema=_schema_ddl(args.get("schema")),
        partition_cols=parse_partition_cols(partition_cols),
        unpartitioned=partition_cols is not None and len(partition_cols) == 0,
        cluster_by=columns_tuple(args.get("cluster_by"), "cluster_by") or (),
        table_properties={**_str_dict(args.get("table_properties"), "table_properties"),
                          **maintenance_properties(args.get("sort_order"),
                                                   _per_table(args.get("maintenance")))},
        primary_key=columns_tuple(args.get("primary_key"), "primary_key"),
        merge_engine=cast("MergeEngine | None", args.get("merge_engine")),  # TableSpec parses it
        freshness=parse_seconds(args.get("freshness"), "freshness"),
        freshness_warn=parse_seconds(args.get("freshness_warn"), "freshness_warn"),
        changelog=bool(args.get("changelog", False)),
        format=table_format,
        expectations=_expectations(func, args),
        location=location,
    )


def _dataset_decorator(kind: TableKind, func: _F | None, args: TableOptions | ViewOptions,
                       location: SourceLocation) -> _F | Callable[[_F], _F]:
    """``@dp.<kind>`` applied to ``func``, or the decorator ``@dp.<kind>(...)`` returns."""
    api = _API_NAME[kind]
    _checked(api, args, ViewOptions if kind == "temporary_view" else TableOptions)

    def outer(func: _F) -> _F:
        registry = active_registry(api)
        with located(location):
            query_arity(func, api)
            spec = _build_table(kind, args.get("name") or func.__name__, func,
                                cast(StoredOptions, args), registry, location)
            registry.register_table(spec)
            registry.register_flow(FlowSpec(
                name=spec.name, target=spec.name, query=func, kind=_FLOW_KIND[kind],
                spark_conf=_flow_conf(args.get("spark_conf")), location=location,
            ))
            registry.bind_function(func, spec.name)
        return func

    return outer(func) if func is not None else outer


# --------------------------------------------------------------------------- datasets
@overload
def table(query_function: _F) -> _F: ...
@overload
def table(query_function: None = None, **options: Unpack[TableOptions]
          ) -> Callable[[_F], _F]: ...
def table(query_function: _F | None = None, **options: Unpack[TableOptions]
          ) -> _F | Callable[[_F], _F]:
    """Declare a streaming table and its append flow (``@dp.table`` or ``@dp.table(...)``);
    the keywords are :class:`TableOptions`.

    ``partition_cols`` take Iceberg transforms (``"days(eventTime)"``, ``"bucket(16, id)"``);
    a primary-key table without them is bucketed ``bucket(16, key)``, and ``[]`` declares
    it unpartitioned (a small table: one file per commit, not one per bucket touched);
    ``freshness`` is the staleness target (``"10 seconds"``), ``freshness_warn`` an
    earlier warning threshold; ``merge_engine`` needs ``primary_key``. icetide's
    additions (keyword-only): ``sort_order`` (compaction's order: ``"ts DESC, id"`` or
    ``"zorder(a, b)"``) and ``maintenance`` (overrides of ``maintenance.*``, e.g.
    ``{"target_file_size": 67108864, "snapshot_retention": "2h"}``).
    """
    return _dataset_decorator("streaming_table", query_function, options, caller_location())


@overload
def materialized_view(query_function: _F) -> _F: ...
@overload
def materialized_view(query_function: None = None, **options: Unpack[TableOptions]
                      ) -> Callable[[_F], _F]: ...
def materialized_view(query_function: _F | None = None, **options: Unpack[TableOptions]
                      ) -> _F | Callable[[_F], _F]:
    """Declare a materialized view: a table recomputed by a batch flow from its query
    (the keywords of :func:`table`)."""
    return _dataset_decorator("materialized_view", query_function, options, caller_location())


@overload
def temporary_view(query_function: _F) -> _F: ...
@overload
def temporary_view(query_function: None = None, **options: Unpack[ViewOptions]
                   ) -> Callable[[_F], _F]: ...
def temporary_view(query_function: _F | None = None, **options: Unpack[ViewOptions]
                   ) -> _F | Callable[[_F], _F]:
    """SDP's temporary view (a named query other flows read, never stored): refused —
    icetide's flows read tables and sources, and a view's query is not run inside the
    flows that read it, so a run would stop on it. The error says what to write instead."""
    with located(caller_location()):
        raise PipelineError(
            "temporary_view is not run by icetide: its flows read tables and sources, and a "
            "view's query is not run inside the flows that read it. Write the view as a "
            "function the flows call (def positive(): return dp.read_stream('raw')"
            ".where('n > 0')), or declare it with @dp.table to store it")


def create_streaming_table(name: str, **options: Unpack[StoredOptions]) -> None:
    """Declare a streaming table with no flow; ``append_flow``/``create_auto_cdc_flow`` fill
    it (keywords: :class:`StoredOptions`)."""
    _checked("create_streaming_table", options, StoredOptions)
    location = caller_location()
    registry = active_registry("create_streaming_table")
    with located(location):
        if not isinstance(name, str):
            raise PipelineError(f"create_streaming_table(name={name!r}): name must be a string")
        spec = _build_table("streaming_table", name, None, options, registry, location)
        registry.register_table(spec)


# --------------------------------------------------------------------------- flows
def _flow_name(registry: GraphRegistry, name: str, target: str, loc: SourceLocation) -> str:
    """An unqualified flow name lives in its target's database."""
    if not isinstance(name, str) or not name:
        raise PipelineError(f"flow name {name!r} must be a non-empty string")
    if "." not in name:
        return f"{target.split('.')[0]}.{name}"
    return registry.qualify(name, loc)


def append_flow(
    *,
    target: str,
    name: str | None = None,
    spark_conf: dict[str, str] | None = None,
    once: bool = False,
) -> Callable[[_F], _F]:
    """Decorate a query function as an extra flow appending into streaming table ``target``.

    ``once=True`` (SDP's one-time backfill) is refused: see :func:`_once`.
    """
    location = caller_location()
    with located(location):
        _once(once)

    def outer(func: _F) -> _F:
        registry = active_registry("append_flow")
        with located(location):
            query_arity(func, "append_flow")
            if getattr(func, EXPECTATIONS_ATTR, None) or registry.is_pending(func):
                raise PipelineError(
                    "expectations belong to tables, not to append flows: put @dp.expect... on the "
                    f"@dp.table, or pass expectations=[...] to create_streaming_table({target!r})"
                )
            qualified_target = registry.qualify(target, location)
            registry.register_flow(FlowSpec(
                name=_flow_name(registry, name or func.__name__, qualified_target, location),
                target=qualified_target, query=func, kind="append", once=bool(once),
                spark_conf=_flow_conf(spark_conf), location=location,
            ))
        return func

    return outer


def _once(once: bool) -> None:
    """SDP's ``once=True`` (run the flow a single time, again only on a full refresh):
    refused when given — icetide runs every flow from the position committed in its
    target and keeps no record that a flow ran once, so it would run on every start."""
    if once:
        raise PipelineError(
            "once=True is not applied: icetide runs every flow continuously from the "
            "position committed in its target, and keeps no record that a flow already "
            "ran once. Backfill with a flow run on its own (icetide run PIPELINE --once "
            "--flow NAME), then remove it; or drop once=")


def _sql_text(value: object, what: str) -> str:
    """A column name / SQL expression from a string or a pyspark ``Column`` (duck-typed,
    no pyspark here: the expression its JVM side prints, as ``repr(column)`` shows it)."""
    if isinstance(value, str) and value.strip():
        return value
    column = None if isinstance(value, str) else getattr(value, "_jc", None)
    if column is None:
        raise PipelineError(f"{what}={value!r} must be a column name or SQL expression string")
    return str(column.toString())


def _sql_columns(values: Sequence[object] | None, what: str) -> tuple[str, ...] | None:
    if values is None:
        return None
    if isinstance(values, str):
        raise PipelineError(f"{what}={values!r} must be a list of columns: write [{values!r}]")
    return tuple(check_column(_sql_text(v, what), what) for v in values)


def _sql_optional(value: object | None, what: str) -> str | None:
    return None if value is None else _sql_text(value, what)


def _cdc_source(registry: GraphRegistry, source: str | object, location: SourceLocation
                ) -> str | object:
    if source is None:
        raise PipelineError("create_auto_cdc_flow: source must be a dataset name or a source")
    return registry.qualify(source, location) if isinstance(source, str) else source


def _scd_type(value: int | str, *tracked: Sequence[str] | None) -> Literal[1]:
    if any(tracked):
        raise PipelineError("track_history_[except_]column_list needs SCD type 2, which "
                            "icetide does not support")
    if value in (1, "1"):
        return 1
    raise PipelineError(f"stored_as_scd_type={value!r} must be 1: icetide keeps SCD type 1; "
                        "set changelog=True on the target for history")


def create_auto_cdc_flow(
    target: str,
    source: str | object,
    keys: Sequence[str] | Sequence[object],
    sequence_by: str | object,
    ignore_null_updates: bool = False,
    apply_as_deletes: str | object | None = None,
    apply_as_truncates: str | object | None = None,
    column_list: Sequence[str] | Sequence[object] | None = None,
    except_column_list: Sequence[str] | Sequence[object] | None = None,
    stored_as_scd_type: int | str = 1,
    track_history_column_list: Sequence[str] | None = None,
    track_history_except_column_list: Sequence[str] | None = None,
    name: str | None = None,
    once: bool = False,
) -> None:
    """Apply a change feed to streaming table ``target`` by ``keys``, ordered by ``sequence_by``.

    ``source`` is a dataset name of the pipeline or an icetide source object (e.g. a MySQL
    binlog source). Columns may be strings or pyspark Columns; SCD type 1 only; ``once``:
    :func:`_once`."""
    location = caller_location()
    registry = active_registry("create_auto_cdc_flow")
    with located(location):
        _once(once)
        qualified_target = registry.qualify(target, location)
        cdc = AutoCdcSpec(
            source=_cdc_source(registry, source, location),
            keys=_sql_columns(keys, "keys") or (),
            sequence_by=_sql_text(sequence_by, "sequence_by"),
            apply_as_deletes=_sql_optional(apply_as_deletes, "apply_as_deletes"),
            apply_as_truncates=_sql_optional(apply_as_truncates, "apply_as_truncates"),
            column_list=_sql_columns(column_list, "column_list"),
            except_column_list=_sql_columns(except_column_list, "except_column_list"),
            ignore_null_updates=bool(ignore_null_updates),
            stored_as_scd_type=_scd_type(stored_as_scd_type, track_history_column_list,
                                         track_history_except_column_list))
        registry.register_flow(FlowSpec(
            name=_flow_name(registry, name or qualified_target, qualified_target, location),
            target=qualified_target, kind="auto_cdc", cdc=cdc, location=location))


def configuration(key: str, default: str | None = None) -> str | None:
    """The pipeline's ``configuration:`` value for ``key`` while its files load.

    SDP code reads its configuration through ``spark.conf``; icetide declarations run
    without Spark, so they read it here — e.g. to declare CDC flows only when
    ``clickstream.dims`` is ``cdc``. ``icetide run --conf key=value`` overrides the file.
    """
    registry = active_registry("configuration")
    return registry.configuration.get(key, default)
