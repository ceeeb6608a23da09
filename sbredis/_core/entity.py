"""Entity properties: validation, the registry's JSON form and the per-partition config hash."""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Set
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import timedelta
from enum import Enum
from typing import Any, ClassVar, TypeVar

from .._message import utf8_text
from ..exceptions import InvalidArgumentError, InvalidOperationError
from .auth_rules import check_rules, rules_from_json, rules_to_json

# TimeSpan.MaxValue, which the Azure SDK returns for "never".
TIMESPAN_MAX = timedelta(days=10675199, seconds=10085, microseconds=477581)
MAX_LOCK = timedelta(minutes=5)
MAX_DEDUP_WINDOW = timedelta(days=7)
MAX_PARTITIONS = 1024
DEFAULT_PARTITIONS = 16
MAX_MESSAGE_KB = 102400
MIN_AUTO_DELETE_ON_IDLE = timedelta(minutes=5)
# Lowers the 5-minute minimum of auto_delete_on_idle (seconds; for tests and development only).
MIN_IDLE_ENV = "SBREDIS_MIN_AUTO_DELETE_ON_IDLE"
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._\-/]{0,258}[A-Za-z0-9])?$")


class EntityStatus(str, Enum):
    ACTIVE = "Active"
    DISABLED = "Disabled"
    SEND_DISABLED = "SendDisabled"
    RECEIVE_DISABLED = "ReceiveDisabled"


def check_name(name: Any, what: str = "queue") -> str:
    """Raises InvalidArgumentError unless `name` is a valid entity name."""
    if not isinstance(name, str):
        raise InvalidArgumentError(f"{what} name must be a str, not {type(name).__name__}")
    if not _NAME.fullmatch(name):
        raise InvalidArgumentError(
            f"invalid {what} name {name[:80]!r}: 1-260 letters, digits, '.', '-', '_' or '/', "
            "starting and ending with a letter or digit"
        )
    if "/subscriptions/" in name.lower():
        raise InvalidArgumentError(f"invalid {what} name {name[:80]!r}: '/Subscriptions/' names a subscription path")
    return name


def min_auto_delete_on_idle() -> timedelta:
    """The smallest auto_delete_on_idle accepted: 5 minutes, or $SBREDIS_MIN_AUTO_DELETE_ON_IDLE
    seconds when set (a lower bound for tests)."""
    raw = os.environ.get(MIN_IDLE_ENV)
    if raw:
        try:
            return timedelta(seconds=max(0.001, float(raw)))
        except ValueError:
            raise InvalidArgumentError(f"${MIN_IDLE_ENV} must be a number of seconds, not {raw!r}") from None
    return MIN_AUTO_DELETE_ON_IDLE


def check_auto_delete(value: timedelta) -> timedelta:
    """auto_delete_on_idle: "never" (TimeSpan.MaxValue) or at least the minimum."""
    if _ms(value) and value < min_auto_delete_on_idle():
        raise InvalidArgumentError(f"auto_delete_on_idle must be at least {min_auto_delete_on_idle()}")
    return value


_SB_URL = re.compile(r"sb://[^/]+/(.+)")


def check_forward(name: str, field_: str, value: Any) -> str | None:
    """A forward_to / forward_dead_lettered_messages_to value: None or a queue or topic name, also
    as the Service Bus address ``sb://<namespace>/<name>`` (the SDK's form; the namespace is this
    connection's, so only the name is kept). The entity itself is allowed, as Service Bus allows
    it: each message then goes round until its hop count runs out (fanout.MAX_HOPS) and lands in
    the transfer dead-letter subqueue."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and (url := _SB_URL.fullmatch(value)):
        value = url.group(1).rstrip("/")
    return check_name(value, f"{field_} destination")


def forward_address(namespace: str, target: str | None) -> str | None:
    """A stored forwarding destination as the SDK returns it: ``sb://<namespace>/<name>``."""
    return f"sb://{namespace}/{target}" if target else None


_Model = TypeVar("_Model", bound="SdkModel")


class DictLike:
    """Properties readable as a mapping of their fields (``dict(props)``, ``props["name"]``), as
    the SDK's models are."""

    def keys(self) -> list[str]:
        return [f.name for f in fields(self)]  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self.keys() else default

    def items(self) -> list[tuple[str, Any]]:
        return [(k, getattr(self, k)) for k in self.keys()]

    def values(self) -> list[Any]:
        return [getattr(self, k) for k in self.keys()]


class SdkModel(DictLike):
    """Entity properties whose constructor, as the SDK's, wants every field (a TypeError names the
    missing ones); ``defaults()`` builds one from some of them, the rest at their defaults."""

    _OPTIONAL: ClassVar[frozenset[str]] = frozenset()  # sbredis's own fields, which the SDK has not
    _dataclass_init: ClassVar[Any]

    @classmethod
    def defaults(cls: type[_Model], *args: Any, **kwargs: Any) -> _Model:
        obj = cls.__new__(cls)
        cls._dataclass_init(obj, *args, **kwargs)
        return obj


def strict_init(cls: type[_Model]) -> type[_Model]:
    """Class decorator (after @dataclass): the generated __init__ refuses missing fields."""
    generated = cls.__init__
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]

    def strict(self: Any, *args: Any, **kwargs: Any) -> None:
        given = set(names[: len(args)]) | set(kwargs)
        missing = [n for n in names if n not in given and n not in cls._OPTIONAL]
        if missing:
            raise TypeError(f"{cls.__name__}() missing required keyword arguments: {', '.join(missing)}")
        generated(self, *args, **kwargs)

    cls._dataclass_init = generated
    cls.__init__ = strict  # type: ignore[method-assign]
    return cls


def from_mapping(cls: type[Any], value: Any, what: str) -> Any:
    """`value` as `cls` (a properties dataclass): itself, or a mapping of its fields (as
    ``dict(props)`` gives), as the SDK's update_* methods take.

    Raises:
        InvalidArgumentError: neither, or a mapping with unknown or missing fields.
    """
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{what} takes the {cls.__name__} from get_*, or a dict of its fields")
    known = {f.name for f in fields(cls)}
    wrong = sorted(set(value) ^ known)  # every field, as the SDK's models are built with all of them
    if wrong:
        raise InvalidArgumentError(f"{what}: a dict of every {cls.__name__} field, not these: {wrong}")
    return cls(**value)


@strict_init
@dataclass
class QueueProperties(SdkModel):
    """A queue's settings, as ``azure.servicebus.management.QueueProperties`` (plus partition_count)."""

    name: str
    lock_duration: timedelta = timedelta(seconds=60)
    max_size_in_megabytes: int = 1024
    requires_duplicate_detection: bool = False
    requires_session: bool = False
    default_message_time_to_live: timedelta = TIMESPAN_MAX
    dead_lettering_on_message_expiration: bool = False
    duplicate_detection_history_time_window: timedelta = timedelta(minutes=10)
    max_delivery_count: int = 10
    enable_batched_operations: bool = True
    status: EntityStatus = EntityStatus.ACTIVE
    auto_delete_on_idle: timedelta = TIMESPAN_MAX
    enable_partitioning: bool = False
    partition_count: int = 0  # 0: the default (16 when partitioned, else 1)
    forward_to: str | None = None
    forward_dead_lettered_messages_to: str | None = None
    user_metadata: str | None = None
    max_message_size_in_kilobytes: int = 256
    enable_express: bool = False
    availability_status: str = "Available"
    authorization_rules: list[Any] = field(default_factory=list)

    _OPTIONAL = frozenset({"partition_count"})

    # -- the registry's JSON form
    def to_json(self) -> str:
        raw = asdict(self)
        raw["authorization_rules"] = rules_to_json(self.authorization_rules)
        for k, v in raw.items():
            if isinstance(v, timedelta):
                raw[k] = _ms(v)
            elif isinstance(v, Enum):
                raw[k] = v.value
        return json.dumps(raw, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> QueueProperties:
        raw = json.loads(text)
        known = {f.name: f for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for k, v in raw.items():
            if k not in known:
                continue
            if k in _DURATIONS:
                v = TIMESPAN_MAX if v == 0 else timedelta(milliseconds=v)
            elif k == "status":
                v = EntityStatus(v)
            elif k == "authorization_rules":
                v = rules_from_json(v)
            kwargs[k] = v
        return cls.defaults(**kwargs)


_DURATIONS = {
    "lock_duration",
    "default_message_time_to_live",
    "duplicate_detection_history_time_window",
    "auto_delete_on_idle",
}
_SETTABLE = {f.name for f in fields(QueueProperties)} - {"name", "availability_status"}


def _ms(value: timedelta) -> int:
    """Milliseconds; 0 stands for "never" (TimeSpan.MaxValue or more than 100 years)."""
    if value >= timedelta(days=36500):
        return 0
    return max(1, round(value / timedelta(milliseconds=1)))


_ISO_DURATION = re.compile(
    r"(-)?P(?:(\d+(?:\.\d+)?)Y)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?"
)
_ISO_UNITS = (365 * 86400, 30 * 86400, 7 * 86400, 86400, 3600, 60, 1)  # a year 365 days, a month 30, as .NET


def iso_duration(name: str, text: str) -> timedelta:
    """An ISO 8601 duration ("PT30S", "P1DT2H", "P10675199DT2H48M5.4775807S"), as the Service Bus
    REST API writes them and the Azure SDK accepts them.

    Raises:
        InvalidArgumentError: not such a duration.
    """
    match = _ISO_DURATION.fullmatch(text.strip()) if len(text) <= 64 else None
    if match is None or not any(match.groups()[1:]) or text.rstrip().endswith("T"):
        raise InvalidArgumentError(f"{name} must be a timedelta or an ISO 8601 duration, not {text[:64]!r}")
    seconds = sum(float(v) * unit for v, unit in zip(match.groups()[1:], _ISO_UNITS, strict=True) if v)
    if match.group(1):
        seconds = -seconds
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        return TIMESPAN_MAX


def _duration(name: str, value: Any, upper: timedelta | None = None) -> timedelta:
    if isinstance(value, str):
        value = iso_duration(name, value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise InvalidArgumentError(f"{name} must be a finite duration")
        try:
            value = timedelta(seconds=value)
        except OverflowError:
            raise InvalidArgumentError(f"{name} must be at most {upper or timedelta.max}") from None
    if not isinstance(value, timedelta):
        raise InvalidArgumentError(f"{name} must be a timedelta or an ISO 8601 duration, not {type(value).__name__}")
    if value <= timedelta(0) or value < timedelta(milliseconds=1):
        raise InvalidArgumentError(f"{name} must be at least 1 ms")
    if upper is not None and value > upper:
        raise InvalidArgumentError(f"{name} must be at most {upper}")
    return value


# Service Bus's limit on an entity's user metadata (its administration API refuses longer text).
MAX_USER_METADATA = 1024


def check_metadata(value: Any) -> str | None:
    """user_metadata: None or text (that UTF-8 can carry) of at most MAX_USER_METADATA characters."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgumentError(f"user_metadata must be a str, not {type(value).__name__}")
    if len(value) > MAX_USER_METADATA:
        raise InvalidArgumentError(f"user_metadata is longer than {MAX_USER_METADATA} characters")
    return utf8_text("user_metadata", value)


def _int(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidArgumentError(f"{name} must be between {low} and {high}")
    return value


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be a bool, not {type(value).__name__}")
    return value


# What a queue's, a topic's and a subscription's properties check alike (build_queue here,
# build_topic and build_subscription in topic_entity.py).
def check_known(kwargs: Mapping[str, Any], settable: Set[str], what: str) -> None:
    """Raises InvalidArgumentError naming the keywords that are not properties of `what`."""
    unknown = set(kwargs) - settable
    if unknown:
        raise InvalidArgumentError(f"unknown {what} properties: {', '.join(sorted(unknown))}")


def check_flags(p: Any, *names: str) -> None:
    """Raises InvalidArgumentError when one of the named properties of `p` is not a bool."""
    for name in names:
        _bool(name, getattr(p, name))


def check_status(value: Any) -> EntityStatus:
    """The EntityStatus `value` names (an EntityStatus or its string).

    Raises:
        InvalidArgumentError: not a status.
    """
    try:
        return EntityStatus(value)
    except ValueError:
        raise InvalidArgumentError(f"unknown status {value!r}") from None


def check_partitions(enabled: bool, count: Any) -> int:
    """The partition count: `count`, or when it is unset (0, None) the default for `enabled`.

    Raises:
        InvalidArgumentError: not an int from 1 to MAX_PARTITIONS.
        InvalidOperationError: more than one without enable_partitioning.
    """
    n = _int("partition_count", count or (DEFAULT_PARTITIONS if enabled else 1), 1, MAX_PARTITIONS)
    if not enabled and n != 1:
        raise InvalidOperationError("partition_count needs enable_partitioning=True")
    return n


def build_queue(name: str, base: QueueProperties | None = None, **kwargs: Any) -> QueueProperties:
    """Validated properties from keyword arguments (on top of `base` for an update).

    Raises:
        InvalidArgumentError: an unknown keyword, a wrong type or a value out of range.
        InvalidOperationError: partition_count without enable_partitioning.
    """
    check_name(name)
    check_known(kwargs, _SETTABLE, "queue")
    p = replace(base, **kwargs) if base is not None else QueueProperties.defaults(name, **kwargs)
    p.name = name
    p.lock_duration = _duration("lock_duration", p.lock_duration, MAX_LOCK)
    p.default_message_time_to_live = _duration("default_message_time_to_live", p.default_message_time_to_live)
    p.duplicate_detection_history_time_window = _duration(
        "duplicate_detection_history_time_window",
        p.duplicate_detection_history_time_window,
        MAX_DEDUP_WINDOW,
    )
    p.auto_delete_on_idle = check_auto_delete(_duration("auto_delete_on_idle", p.auto_delete_on_idle))
    p.user_metadata = check_metadata(p.user_metadata)
    p.authorization_rules = check_rules(p.authorization_rules)
    p.forward_to = check_forward(name, "forward_to", p.forward_to)
    p.forward_dead_lettered_messages_to = check_forward(
        name, "forward_dead_lettered_messages_to", p.forward_dead_lettered_messages_to
    )
    p.max_size_in_megabytes = _int("max_size_in_megabytes", p.max_size_in_megabytes, 1, 1048576)
    p.max_delivery_count = _int("max_delivery_count", p.max_delivery_count, 1, 2**31 - 1)
    p.max_message_size_in_kilobytes = _int(
        "max_message_size_in_kilobytes", p.max_message_size_in_kilobytes, 1, MAX_MESSAGE_KB
    )
    check_flags(
        p,
        "requires_duplicate_detection",
        "requires_session",
        "dead_lettering_on_message_expiration",
        "enable_batched_operations",
        "enable_partitioning",
        "enable_express",
    )
    p.status = check_status(p.status)
    p.partition_count = check_partitions(p.enable_partitioning, p.partition_count)
    return p


def new_generation() -> str:
    """A fresh entity generation: each create gets one, kept in the registry record (GENERATION)
    and every partition's cfg (includes/partition.lua checks callers against it)."""
    return os.urandom(6).hex()


GENERATION = "_g"  # the registry record's field holding the entity's generation


def partition_config(p: QueueProperties, partition: int, gen: str = "") -> dict[str, str | int]:
    """The cfg hash written into every partition: what the scripts enforce. `gen`: the entity's
    generation ('' for an entity created before generations: the scripts check no caller)."""
    return {
        "name": p.name,
        "gen": gen,
        "pidx": partition,
        "pcount": p.partition_count,
        "status": p.status.value,
        "lock_ms": _ms(p.lock_duration),
        "max_dc": p.max_delivery_count,
        "ttl_ms": _ms(p.default_message_time_to_live),
        "dl_exp": int(p.dead_lettering_on_message_expiration),
        "dedup_ms": _ms(p.duplicate_detection_history_time_window) if p.requires_duplicate_detection else 0,
        "max_msg": p.max_message_size_in_kilobytes * 1024,
        "max_size": p.max_size_in_megabytes * 1024 * 1024,
        "fwd": p.forward_to or "",
        "fwdl": p.forward_dead_lettered_messages_to or "",
        "sess": int(p.requires_session),
    }
