"""The pinned JVM dependency list, the groups a configuration needs, the manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide.config import CatalogConfig, Settings
from icetide.errors import RuntimeSetupError
from icetide.runtime.jars import (
    ALWAYS,
    Coordinate,
    ResolvedJar,
    load_spec,
    needed_groups,
    read_manifest,
    write_manifest,
)


def test_the_shipped_list_pins_every_group_the_code_names() -> None:
    spec = load_spec()
    assert set(ALWAYS) | {"aws", "s3a", "postgres", "kafka-broker", "hudi"} == set(spec.groups)
    # the broker runs in a JVM of its own: resolved whole, never on a Spark class path
    assert [g for g, group in spec.groups.items() if group.jvm == "own"] == ["kafka-broker"]
    coords = {str(c) for g in spec.groups.values() for c in g.parsed()}
    assert "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7" in coords
    iceberg = spec.groups["iceberg"].parsed()[0]
    aws = spec.groups["aws"].parsed()[0]
    assert iceberg.artifact == "iceberg-spark-runtime-3.5_2.12"
    assert aws.version == iceberg.version  # the bundle must match the runtime


def test_a_coordinate_parses_and_a_bad_one_names_itself() -> None:
    c = Coordinate.parse("org.postgresql:postgresql:42.7.14")
    assert (c.group, c.artifact, c.version, c.file_name) == (
        "org.postgresql", "postgresql", "42.7.14", "postgresql-42.7.14.jar")
    with pytest.raises(RuntimeSetupError, match=r"'postgresql' .* group:artifact:version"):
        Coordinate.parse("postgresql")


def test_a_list_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "jars.toml"
    path.write_text('[groups.x]\nwhy = "x"\ncoordinates = ["a:b:1"]\nversion = "2"\n')
    with pytest.raises(RuntimeSetupError, match=r"jars\.toml"):
        load_spec(path)


@pytest.mark.parametrize(("catalog", "groups"), [
    (CatalogConfig(type="hadoop"), ("iceberg", "kafka")),
    (CatalogConfig(type="hadoop", warehouse="s3://lake/wh"), ("iceberg", "kafka", "aws")),
    (CatalogConfig(type="hive", warehouse="s3a://lake/wh"), ("iceberg", "kafka", "aws")),
    (CatalogConfig(type="rest", uri="http://r",
                   properties={"io-impl": "org.apache.iceberg.aws.s3.S3FileIO"}),
     ("iceberg", "kafka", "aws")),
    (CatalogConfig(type="jdbc", uri="jdbc:postgresql://h/d"), ("iceberg", "kafka", "postgres")),
])
def test_a_session_takes_the_groups_its_catalog_needs(
        tmp_path: Path, catalog: CatalogConfig, groups: tuple[str, ...]) -> None:
    assert needed_groups(Settings(home=tmp_path, catalog=catalog)) == groups


def test_a_manifest_round_trips_and_a_missing_file_voids_it(tmp_path: Path) -> None:
    jar = tmp_path / "a-1.jar"
    jar.write_bytes(b"PK")
    found = {"g": (ResolvedJar("x:a:1", jar),)}
    write_manifest(tmp_path / "m.json", found, relative_to=tmp_path)
    assert '"path": "a-1.jar"' in (tmp_path / "m.json").read_text()
    assert read_manifest(tmp_path / "m.json") == found
    jar.unlink()
    assert read_manifest(tmp_path / "m.json") is None
    assert read_manifest(tmp_path / "absent.json") is None


def test_pyspark_jars_are_left_out_only_of_the_spark_groups() -> None:
    from icetide.runtime.ivy import ivy_module

    module = ivy_module(load_spec(), ["scala-library"])
    spark_groups = "iceberg,kafka,aws,s3a,postgres,hudi"
    assert f'<exclude module="scala-library" matcher="exact" conf="{spark_groups}"/>' in module
    assert '<conf name="kafka-broker"/>' in module and 'name="kafka_2.13"' in module
