"""Pydantic's validation errors worded in one place: where, the key, the value, the fix."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from icetide.config import Duration
from icetide.config.invalid import Loc, dotted, validation_message


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")

    interval: Duration = Field(default=1.0, ge=60)


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str
    port: int = 0
    wait: Duration | None = Field(default=None, gt=0)
    inner: Inner = Inner(interval=60)


def _error(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        Model.model_validate(data)
    return info.value


def test_an_unknown_key_names_the_allowed_keys_and_the_docs() -> None:
    exc = _error({"topic": "t", "topik": "u"})
    assert validation_message(exc, "p.yml: kafka source 'clicks'", allowed=Model.model_fields,
                              see="docs/config.md") == (
        "p.yml: kafka source 'clicks': unknown key 'topik' (check the spelling; allowed: "
        "topic, port, wait, inner; see docs/config.md)")
    assert validation_message(exc) == "unknown key 'topik' (check the spelling)"


def test_a_missing_key_says_what_to_write() -> None:
    exc = _error({})
    assert validation_message(exc, "src", hints={"topic": "the topic's name"}) == (
        "src: missing required key 'topic'; write the topic's name")


def test_a_bad_value_is_named_key_equals_value_with_its_fix() -> None:
    exc = _error({"topic": "t", "port": "many"})
    assert validation_message(exc, "cfg", hints={"port": "a port number"}, see="docs/x.md") == (
        "cfg: port='many': Input should be a valid integer, unable to parse string as an "
        "integer; write a port number (see docs/x.md)")


def test_the_value_shown_is_the_one_written_not_the_converted_one() -> None:
    data = {"topic": "t", "inner": {"interval": "1 minute", "x": 1}}
    with pytest.raises(ValidationError) as info:
        Model.model_validate({**data, "inner": {"interval": "59s"}})
    assert validation_message(info.value, given={**data, "inner": {"interval": "59s"}}) == (
        "inner.interval='59s': Input should be greater than or equal to 60")
    assert validation_message(info.value) == (  # without it: pydantic's converted value
        "inner.interval=59.0: Input should be greater than or equal to 60")


def test_a_zero_bound_reads_must_be_positive_and_a_value_error_drops_its_prefix() -> None:
    assert validation_message(_error({"topic": "t", "wait": "0s"}), given={"wait": "0s"}) == (
        "wait='0s': must be positive")
    assert validation_message(_error({"topic": "t", "wait": "soon"})).startswith(
        "wait='soon': invalid duration 'soon'")


def test_one_line_per_key_in_order_and_a_union_reported_once() -> None:
    exc = _error({"port": "x", "wait": [1], "colour": 1})
    lines = validation_message(exc, "f").splitlines()
    assert [line.split(":")[1].split("=")[0].strip() for line in lines] == [
        "missing required key 'topic'", "port", "wait", "unknown key 'colour' (check the spelling)"]
    assert all(line.startswith("f: ") for line in lines)


def test_keys_are_named_as_the_user_wrote_them() -> None:
    def env(loc: Loc) -> str:
        return "ICETIDE_" + "__".join(str(p).upper() for p in loc)

    exc = _error({"topic": "t", "inner": {"interval": 5}})
    assert validation_message(exc, "environment", key=env) == (
        "environment: ICETIDE_INNER__INTERVAL=5.0: Input should be greater than or equal to 60")
    assert dotted(("kafka", "properties", 0)) == "kafka.properties.0"


def test_a_value_with_no_location_is_named_by_the_caller() -> None:
    with pytest.raises(ValidationError) as info:
        TypeAdapter(Duration).validate_python([1])
    assert validation_message(info.value, key=lambda _: "freshness") == (
        "freshness=[1]: invalid duration [1]: write e.g. '10 seconds' or '2 minutes'")
    assert validation_message(info.value) == (
        "invalid duration [1]: write e.g. '10 seconds' or '2 minutes'")


def test_a_value_failing_every_member_of_a_union_is_one_line_at_the_users_key() -> None:
    class Either(BaseModel):
        n: int | bool = 0
        xs: list[int | bool] = []

    given = {"n": [2], "xs": [1, "a"]}
    with pytest.raises(ValidationError) as info:
        Either.model_validate(given)
    assert validation_message(info.value, "f", given=given) == (
        "f: n=[2]: Input should be a valid integer\n"
        "f: xs.1='a': Input should be a valid integer, unable to parse string as an integer")
