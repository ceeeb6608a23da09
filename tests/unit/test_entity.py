"""Queue properties: defaults, validation, the registry's JSON form and the partition config."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sbredis._core.entity import (
    TIMESPAN_MAX,
    EntityStatus,
    QueueProperties,
    build_queue,
    check_name,
    partition_config,
)
from sbredis.exceptions import InvalidArgumentError, InvalidOperationError


def test_defaults() -> None:
    p = build_queue("orders")
    assert p.name == "orders"
    assert p.lock_duration == timedelta(seconds=60)
    assert p.max_delivery_count == 10
    assert p.max_message_size_in_kilobytes == 256
    assert p.max_size_in_megabytes == 1024
    assert p.enable_partitioning is False
    assert p.partition_count == 1
    assert p.requires_duplicate_detection is False
    assert p.requires_session is False
    assert p.duplicate_detection_history_time_window == timedelta(minutes=10)
    assert p.default_message_time_to_live == TIMESPAN_MAX
    assert p.status is EntityStatus.ACTIVE


def test_partitioned_defaults_to_16_partitions() -> None:
    assert build_queue("q", enable_partitioning=True).partition_count == 16
    assert build_queue("q", enable_partitioning=True, partition_count=4).partition_count == 4
    assert build_queue("q", enable_partitioning=True, partition_count=1024).partition_count == 1024
    assert build_queue("q", partition_count=1).partition_count == 1


def test_accepted_values() -> None:
    p = build_queue(
        "q",
        lock_duration=timedelta(minutes=5),
        max_delivery_count=1,
        max_message_size_in_kilobytes=102400,
        duplicate_detection_history_time_window=timedelta(days=7),
        requires_duplicate_detection=True,
        status="Disabled",
        default_message_time_to_live=30,
    )
    assert p.lock_duration == timedelta(minutes=5)
    assert p.status is EntityStatus.DISABLED
    assert p.default_message_time_to_live == timedelta(seconds=30)  # seconds are accepted


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lock_duration": timedelta(minutes=5, milliseconds=1)},
        {"lock_duration": timedelta(minutes=6)},
        {"lock_duration": 301},
        {"lock_duration": 0},
        {"lock_duration": timedelta(0)},
        {"lock_duration": timedelta(seconds=-1)},
        {"lock_duration": -5},
        {"lock_duration": timedelta(microseconds=999)},
        {"lock_duration": "60"},
        {"lock_duration": True},
        {"default_message_time_to_live": timedelta(0)},
        {"default_message_time_to_live": -1},
        {"duplicate_detection_history_time_window": timedelta(0)},
        {"duplicate_detection_history_time_window": timedelta(days=7, seconds=1)},
        {"max_delivery_count": 0},
        {"max_delivery_count": -1},
        {"max_delivery_count": 2**31},
        {"max_delivery_count": 1.0},
        {"max_delivery_count": True},
        {"max_message_size_in_kilobytes": 102401},
        {"max_message_size_in_kilobytes": 0},
        {"max_size_in_megabytes": 0},
        {"max_size_in_megabytes": "1024"},
        {"enable_partitioning": True, "partition_count": 1025},
        {"enable_partitioning": True, "partition_count": -1},
        {"enable_partitioning": 1},
        {"requires_duplicate_detection": "yes"},
        {"status": "Bogus"},
        {"no_such_option": 1},
        {"availability_status": "Limited"},
    ],
    ids=repr,
)
def test_rejected_as_invalid_argument(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError) as ei:
        build_queue("q", **kwargs)
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, TypeError)


def test_unknown_keywords_are_named() -> None:
    with pytest.raises(InvalidArgumentError, match="lock_durtion"):
        build_queue("q", lock_durtion=timedelta(seconds=30))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"partition_count": 4},
        {"enable_partitioning": False, "partition_count": 16},
    ],
    ids=repr,
)
def test_unsupported_settings_are_invalid_operations(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidOperationError) as ei:
        build_queue("q", **kwargs)
    assert not isinstance(ei.value, InvalidArgumentError)
    assert isinstance(ei.value, ValueError)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_nan_and_infinite_durations_are_argument_errors(value: float) -> None:
    with pytest.raises(InvalidArgumentError):
        build_queue("q", lock_duration=value)


# ---------------------------------------------------------------------------------- names
@pytest.mark.parametrize(
    "name", ["orders", "a.b-c_d/e", "x-servicebus-transfer/0", "a", "Q1", "a" * 260, "1.2.3", "A_b"]
)
def test_good_names(name: str) -> None:
    assert check_name(name) == name
    assert build_queue(name).name == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        " ",
        "a b",
        "{orders}",
        "a{b",
        "a}b",
        "a" * 261,
        "-a",
        "a-",
        "a/",
        "/a",
        ".a",
        "a:b",
        "a*b",
        "a\nb",
        "a\tb",
    ],
    ids=repr,
)
def test_bad_names(name: str) -> None:
    with pytest.raises(InvalidArgumentError):
        check_name(name)
    with pytest.raises(InvalidArgumentError):
        build_queue(name)


@pytest.mark.parametrize("name", [None, 1, b"orders", ["orders"]], ids=repr)
def test_non_str_names(name: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        check_name(name)


def test_trailing_newline_is_not_a_valid_name() -> None:
    with pytest.raises(InvalidArgumentError):
        check_name("orders\n")


# ------------------------------------------------------------------------------ JSON form
def test_json_round_trip_of_defaults_and_of_everything_set() -> None:
    for p in (
        build_queue("orders"),
        build_queue(
            "a.b-c_d/e",
            lock_duration=timedelta(seconds=45),
            max_size_in_megabytes=2048,
            requires_duplicate_detection=True,
            default_message_time_to_live=timedelta(hours=3),
            dead_lettering_on_message_expiration=True,
            duplicate_detection_history_time_window=timedelta(minutes=2),
            max_delivery_count=3,
            enable_batched_operations=False,
            status=EntityStatus.RECEIVE_DISABLED,
            enable_partitioning=True,
            partition_count=8,
            user_metadata="meta ✓",
            max_message_size_in_kilobytes=1024,
            enable_express=True,
        ),
    ):
        text = p.to_json()
        assert json.loads(text)["name"] == p.name
        assert QueueProperties.from_json(text) == p
        assert QueueProperties.from_json(text.encode()) == p


def test_json_uses_ms_and_zero_for_never() -> None:
    raw = json.loads(build_queue("q", lock_duration=timedelta(seconds=30)).to_json())
    assert raw["lock_duration"] == 30_000
    assert raw["default_message_time_to_live"] == 0
    assert raw["status"] == "Active"


def test_from_json_ignores_unknown_fields() -> None:
    raw = json.loads(build_queue("q").to_json())
    raw["_c"], raw["_u"], raw["from_the_future"] = 1, 2, {"x": 1}
    assert QueueProperties.from_json(json.dumps(raw)) == build_queue("q")


durations = st.integers(min_value=1, max_value=36499 * 86_400_000).map(lambda ms: timedelta(milliseconds=ms))


@given(
    lock=st.integers(min_value=1, max_value=300_000).map(lambda ms: timedelta(milliseconds=ms)),
    ttl=durations,
    window=st.integers(min_value=1, max_value=7 * 86_400_000).map(lambda ms: timedelta(milliseconds=ms)),
    max_dc=st.integers(min_value=1, max_value=2**31 - 1),
    kb=st.integers(min_value=1, max_value=102400),
    partitions=st.one_of(st.just(0), st.integers(min_value=1, max_value=1024)),
    status=st.sampled_from(list(EntityStatus)),
    flags=st.lists(st.booleans(), min_size=3, max_size=3),
    meta=st.one_of(st.none(), st.text(max_size=50)),
)
def test_json_round_trip_property(
    lock: timedelta,
    ttl: timedelta,
    window: timedelta,
    max_dc: int,
    kb: int,
    partitions: int,
    status: EntityStatus,
    flags: list[bool],
    meta: str | None,
) -> None:
    p = build_queue(
        "q",
        lock_duration=lock,
        default_message_time_to_live=ttl,
        duplicate_detection_history_time_window=window,
        max_delivery_count=max_dc,
        max_message_size_in_kilobytes=kb,
        enable_partitioning=True,
        partition_count=partitions,
        status=status,
        requires_duplicate_detection=flags[0],
        dead_lettering_on_message_expiration=flags[1],
        enable_batched_operations=flags[2],
        user_metadata=meta,
    )
    assert QueueProperties.from_json(p.to_json()) == p


def test_update_on_top_of_base_keeps_the_base() -> None:
    base = build_queue("q", enable_partitioning=True, partition_count=4, max_delivery_count=5)
    before = replace(base)
    p = build_queue("q", base=base, lock_duration=timedelta(seconds=10))
    assert p.lock_duration == timedelta(seconds=10)
    assert (p.partition_count, p.max_delivery_count) == (4, 5)
    assert base == before


# ------------------------------------------------------------------------ partition config
def test_partition_config_is_what_the_scripts_enforce() -> None:
    p = build_queue(
        "q",
        lock_duration=timedelta(seconds=30),
        max_delivery_count=4,
        enable_partitioning=True,
        partition_count=4,
        max_message_size_in_kilobytes=512,
        max_size_in_megabytes=2,
        requires_duplicate_detection=True,
        duplicate_detection_history_time_window=timedelta(minutes=1),
        dead_lettering_on_message_expiration=True,
        default_message_time_to_live=timedelta(hours=1),
        status="SendDisabled",
    )
    cfg = partition_config(p, 3, "g1")
    assert cfg == {
        "name": "q",
        "gen": "g1",
        "pidx": 3,
        "pcount": 4,
        "status": "SendDisabled",
        "lock_ms": 30_000,
        "max_dc": 4,
        "ttl_ms": 3_600_000,
        "dl_exp": 1,
        "dedup_ms": 60_000,
        "max_msg": 512 * 1024,
        "max_size": 2 * 1024 * 1024,
        "fwd": "",
        "fwdl": "",
        "sess": 0,
    }


def test_partition_config_defaults() -> None:
    cfg = partition_config(build_queue("q"), 0)
    assert cfg["ttl_ms"] == 0  # never expires
    assert cfg["dedup_ms"] == 0  # duplicate detection off, whatever the window
    assert cfg["dl_exp"] == 0
    assert cfg["lock_ms"] == 60_000
    assert cfg["max_msg"] == 256 * 1024
