"""Topic, subscription and rule properties: validation, the registry's JSON form, and the commands
that write them (registry entries, each partition's config, the indexes in the registry's slot).

A topic partition ``{sb:<topic>:<p>}`` holds the topic's config and the same partition of every
subscription (``{sb:<topic>:<p>}:s:<name>:*``), so a publish is one script call (keys.py).
Subscriptions inherit the topic's partition count, message size and size limit.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from ..exceptions import InvalidArgumentError
from . import codec, keys, registry
from .auth_rules import check_rules, rules_from_json, rules_to_json
from .entity import (
    MAX_DEDUP_WINDOW,
    MAX_LOCK,
    MAX_MESSAGE_KB,
    TIMESPAN_MAX,
    EntityStatus,
    QueueProperties,
    SdkModel,
    _duration,
    _int,
    _ms,
    check_auto_delete,
    check_flags,
    check_forward,
    check_known,
    check_metadata,
    check_name,
    check_partitions,
    check_status,
    partition_config,
    strict_init,
)
from .rules import (
    CorrelationRuleFilter,
    RuleFilter,
    SqlRuleAction,
    SqlRuleFilter,
    TrueRuleFilter,
    action_from_dict,
    action_to_dict,
    compile_action,
    compile_filter,
    filter_from_dict,
    filter_to_dict,
)

DEFAULT_RULE = "$Default"
# Service Bus quotas, "Number of subscriptions per topic": 2,000 per topic; further creates are
# refused with an exception. It also bounds a publish, which fans out to every subscription in one
# script call (docs/topics.md, Fan-out cost).
MAX_SUBSCRIPTIONS_PER_TOPIC = 2_000
_SUB_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._\-]{0,48}[A-Za-z0-9])?$")
_RULE_NAME = re.compile(r"^[A-Za-z0-9$](?:[A-Za-z0-9._\-$]{0,48}[A-Za-z0-9])?$")
_DURATIONS = {
    "lock_duration",
    "default_message_time_to_live",
    "duplicate_detection_history_time_window",
    "auto_delete_on_idle",
}


def check_subscription_name(name: Any) -> str:
    if not isinstance(name, str) or not _SUB_NAME.fullmatch(name):
        raise InvalidArgumentError(
            f"invalid subscription name {str(name)[:80]!r}: 1-50 letters, digits, '.', '-' or '_', "
            "starting and ending with a letter or digit"
        )
    return name


def check_rule_name(name: Any) -> str:
    if not isinstance(name, str) or not _RULE_NAME.fullmatch(name):
        raise InvalidArgumentError(f"invalid rule name {str(name)[:80]!r}: 1-50 letters, digits, '.', '-', '_' or '$'")
    return name


@strict_init
@dataclass
class TopicProperties(SdkModel):
    """A topic's settings, as ``azure.servicebus.management.TopicProperties`` (plus partition_count)."""

    name: str
    default_message_time_to_live: timedelta = TIMESPAN_MAX
    max_size_in_megabytes: int = 1024
    requires_duplicate_detection: bool = False
    duplicate_detection_history_time_window: timedelta = timedelta(minutes=10)
    enable_batched_operations: bool = True
    size_in_bytes: int = 0
    filtering_messages_before_publishing: bool = False
    authorization_rules: list[Any] = field(default_factory=list)
    support_ordering: bool = False
    auto_delete_on_idle: timedelta = TIMESPAN_MAX
    enable_partitioning: bool = False
    partition_count: int = 0  # 0: the default (16 when partitioned, else 1)
    status: EntityStatus = EntityStatus.ACTIVE
    enable_express: bool = False
    user_metadata: str | None = None
    availability_status: str = "Available"
    max_message_size_in_kilobytes: int = 256

    _OPTIONAL = frozenset({"partition_count"})


@strict_init
@dataclass
class SubscriptionProperties(SdkModel):
    """A subscription's settings, as ``azure.servicebus.management.SubscriptionProperties``."""

    name: str
    lock_duration: timedelta = timedelta(seconds=60)
    requires_session: bool = False
    default_message_time_to_live: timedelta = TIMESPAN_MAX
    dead_lettering_on_message_expiration: bool = False
    dead_lettering_on_filter_evaluation_exceptions: bool = True
    max_delivery_count: int = 10
    enable_batched_operations: bool = True
    status: EntityStatus = EntityStatus.ACTIVE
    forward_to: str | None = None
    user_metadata: str | None = None
    forward_dead_lettered_messages_to: str | None = None
    auto_delete_on_idle: timedelta = TIMESPAN_MAX
    availability_status: str = "Available"


@strict_init
@dataclass
class RuleProperties(SdkModel):
    """A subscription rule, as ``azure.servicebus.management.RuleProperties``."""

    name: str
    filter: RuleFilter | None = None
    action: SqlRuleAction | None = None
    created_at_utc: datetime | None = None


_TOPIC_SETTABLE = {f.name for f in fields(TopicProperties)} - {"name", "availability_status", "size_in_bytes"}
_SUB_SETTABLE = {f.name for f in fields(SubscriptionProperties)} - {"name", "availability_status"}


# ------------------------------------------------------------------------------ JSON form
def to_record(p: Any, kind: str, **extra: Any) -> dict[str, Any]:
    """The registry's JSON object for properties `p` (durations in ms, 0 for "never")."""
    raw = asdict(p)
    if "authorization_rules" in raw:
        raw["authorization_rules"] = rules_to_json(p.authorization_rules)
    for k, v in raw.items():
        if isinstance(v, timedelta):
            raw[k] = _ms(v)
        elif isinstance(v, Enum):
            raw[k] = v.value
    raw["kind"] = kind
    raw.update(extra)
    return raw


def from_record(cls: type[Any], raw: dict[str, Any]) -> Any:
    known = {f.name for f in fields(cls)}
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


def dumps(raw: dict[str, Any]) -> str:
    return json.dumps(raw, separators=(",", ":"))


def kind_of(raw: dict[str, Any]) -> str:
    """'queue' (records written before topics existed have no kind), 'topic', 'subscription', 'rule'."""
    return str(raw.get("kind", "queue"))


# ---------------------------------------------------------------------------- validation
def build_topic(name: str, base: TopicProperties | None = None, **kwargs: Any) -> TopicProperties:
    """Validated topic properties from keyword arguments (on top of `base` for an update).

    Raises:
        InvalidArgumentError: an unknown keyword, a wrong type or a value out of range.
    """
    check_name(name, "topic")
    check_known(kwargs, _TOPIC_SETTABLE, "topic")
    p = replace(base, **kwargs) if base is not None else TopicProperties.defaults(name, **kwargs)
    p.name = name
    p.default_message_time_to_live = _duration("default_message_time_to_live", p.default_message_time_to_live)
    p.duplicate_detection_history_time_window = _duration(
        "duplicate_detection_history_time_window", p.duplicate_detection_history_time_window, MAX_DEDUP_WINDOW
    )
    p.auto_delete_on_idle = check_auto_delete(_duration("auto_delete_on_idle", p.auto_delete_on_idle))
    p.user_metadata = check_metadata(p.user_metadata)
    p.authorization_rules = check_rules(p.authorization_rules)
    p.max_size_in_megabytes = _int("max_size_in_megabytes", p.max_size_in_megabytes, 1, 1048576)
    p.max_message_size_in_kilobytes = _int(
        "max_message_size_in_kilobytes", p.max_message_size_in_kilobytes, 1, MAX_MESSAGE_KB
    )
    check_flags(
        p,
        "requires_duplicate_detection",
        "enable_batched_operations",
        "filtering_messages_before_publishing",
        "support_ordering",
        "enable_partitioning",
        "enable_express",
    )
    p.status = check_status(p.status)
    if p.status is EntityStatus.RECEIVE_DISABLED:
        raise InvalidArgumentError("a topic's status is Active, Disabled or SendDisabled")
    p.partition_count = check_partitions(p.enable_partitioning, p.partition_count)
    return p


def build_subscription(
    topic: str, name: str, base: SubscriptionProperties | None = None, **kwargs: Any
) -> SubscriptionProperties:
    """Validated subscription properties from keyword arguments (on top of `base` for an update).

    Raises:
        InvalidArgumentError: an unknown keyword, a wrong type or a value out of range.
    """
    check_name(topic, "topic")
    check_subscription_name(name)
    check_known(kwargs, _SUB_SETTABLE, "subscription")
    p = replace(base, **kwargs) if base is not None else SubscriptionProperties.defaults(name, **kwargs)
    p.name = name
    p.lock_duration = _duration("lock_duration", p.lock_duration, MAX_LOCK)
    p.default_message_time_to_live = _duration("default_message_time_to_live", p.default_message_time_to_live)
    p.auto_delete_on_idle = check_auto_delete(_duration("auto_delete_on_idle", p.auto_delete_on_idle))
    p.user_metadata = check_metadata(p.user_metadata)
    p.max_delivery_count = _int("max_delivery_count", p.max_delivery_count, 1, 2**31 - 1)
    check_flags(
        p,
        "requires_session",
        "dead_lettering_on_message_expiration",
        "dead_lettering_on_filter_evaluation_exceptions",
        "enable_batched_operations",
    )
    p.status = check_status(p.status)
    path = keys.subscription_path(topic, name)
    p.forward_to = check_forward(path, "forward_to", p.forward_to)
    p.forward_dead_lettered_messages_to = check_forward(
        path, "forward_dead_lettered_messages_to", p.forward_dead_lettered_messages_to
    )
    return p


def build_rule(name: str, rule_filter: Any = None, action: Any = None) -> tuple[RuleProperties, str, str | None]:
    """The rule and its compiled filter and action programs.

    Raises:
        InvalidArgumentError: a bad name or a filter/action of the wrong type.
        RuleCompileError / RuleSyntaxError: the filter or action does not compile.
    """
    check_rule_name(name)
    if rule_filter is not None and not isinstance(rule_filter, (SqlRuleFilter, CorrelationRuleFilter)):
        raise InvalidArgumentError(
            "filter must be a SqlRuleFilter, CorrelationRuleFilter, TrueRuleFilter or FalseRuleFilter"
        )
    if action is not None and not isinstance(action, SqlRuleAction):
        raise InvalidArgumentError("action must be a SqlRuleAction")
    if rule_filter is None:
        rule_filter = TrueRuleFilter()
    program = compile_filter(rule_filter)
    action_program = compile_action(action) if action is not None and action.sql_expression else None
    return RuleProperties(name, rule_filter, action, None), program, action_program


def rule_record(rule: RuleProperties, created_ms: int) -> dict[str, Any]:
    return {
        "kind": "rule",
        "name": rule.name,
        "filter": filter_to_dict(rule.filter),
        "action": action_to_dict(rule.action),
        "_c": created_ms,
    }


def rule_from_record(raw: dict[str, Any]) -> RuleProperties:
    return RuleProperties(
        raw["name"],
        filter_from_dict(raw["filter"]),
        action_from_dict(raw.get("action")),
        codec.from_ms(raw["_c"]) if raw.get("_c") else None,
    )


# ------------------------------------------------------------------------ partition configs
def topic_config(p: TopicProperties, partition: int, gen: str = "") -> dict[str, str | int]:
    """The cfg hash of a topic partition (as a queue's, so the shared helpers read it)."""
    q = QueueProperties.defaults(
        p.name,
        max_size_in_megabytes=p.max_size_in_megabytes,
        requires_duplicate_detection=p.requires_duplicate_detection,
        default_message_time_to_live=p.default_message_time_to_live,
        duplicate_detection_history_time_window=p.duplicate_detection_history_time_window,
        status=p.status,
        partition_count=p.partition_count,
        max_message_size_in_kilobytes=p.max_message_size_in_kilobytes,
    )
    return partition_config(q, partition, gen)


def subscription_config(
    topic: TopicProperties, s: SubscriptionProperties, partition: int, gen: str = ""
) -> dict[str, str | int]:
    q = QueueProperties.defaults(
        keys.subscription_path(topic.name, s.name),
        lock_duration=s.lock_duration,
        max_size_in_megabytes=topic.max_size_in_megabytes,
        default_message_time_to_live=s.default_message_time_to_live,
        dead_lettering_on_message_expiration=s.dead_lettering_on_message_expiration,
        max_delivery_count=s.max_delivery_count,
        status=s.status,
        partition_count=topic.partition_count,
        forward_to=s.forward_to,
        forward_dead_lettered_messages_to=s.forward_dead_lettered_messages_to,
        max_message_size_in_kilobytes=topic.max_message_size_in_kilobytes,
        requires_session=s.requires_session,
    )
    cfg = partition_config(q, partition, gen)
    cfg["dlf"] = int(s.dead_lettering_on_filter_evaluation_exceptions)
    # how many fields these settings are, with nf: publish.lua tells from HLEN that the rest of
    # the hash is the $Default rule alone, without reading it all
    cfg["nf"] = len(cfg) + 1
    return cfg


def transfer_config(owner: dict[str, str | int]) -> dict[str, str | int]:
    """The cfg of a transfer queue: the owner's status, lock and size settings; no expiry, no
    duplicate detection, no forwarding (its dead-letter group is the transfer dead-letter subqueue)."""
    cfg = dict(owner)
    cfg.update(name=f"{owner['name']}{keys.TRANSFER}", ttl_ms=0, dl_exp=0, dedup_ms=0, fwd="", fwdl="", sess=0)
    return cfg


def hset(key: str, mapping: dict[str, Any]) -> tuple[Any, ...]:
    flat: list[Any] = []
    for k, v in mapping.items():
        flat += [k, v]
    return ("HSET", key, *flat)


def owner_config_commands(keys_: tuple[str, ...], cfg: dict[str, str | int]) -> list[tuple[Any, ...]]:
    """Write a queue or subscription partition's cfg and its transfer queue's cfg."""
    return [hset(keys_[0], cfg), hset(keys.transfer_keys(keys_)[0], transfer_config(cfg))]


def owner_delete_keys(keys_: tuple[str, ...]) -> tuple[str, ...]:
    return (*keys_, *keys.transfer_keys(keys_))


def idle_commands(path: str, auto_delete: timedelta, now_ms: int) -> list[tuple[Any, ...]]:
    """Keep the idle index in step with an entity's auto_delete_on_idle (a create or update)."""
    window = _ms(auto_delete)
    if window == 0:
        return [("ZREM", keys.IDLE, path)]
    return [("ZADD", keys.IDLE, now_ms + window, path)]


def forwarder_commands(path: str, forward_to: str | None, dead_letters_to: str | None) -> list[tuple[Any, ...]]:
    """Keep the forwarders index in step with an entity's forwarding (a create or update)."""
    if not forward_to and not dead_letters_to:
        return [("HDEL", keys.FORWARDERS, path)]
    return [("HSET", keys.FORWARDERS, path, json.dumps([forward_to or "", dead_letters_to or ""]))]


def touch_commands(keys_list: list[tuple[str, ...]], now_ms: int) -> list[tuple[Any, ...]]:
    """Mark partitions as used now (an update counts as use for auto-delete-on-idle)."""
    return [("HSET", ks[1], "acc", now_ms) for ks in keys_list]


def topic_create_commands(p: TopicProperties, now_ms: int, gen: str = "") -> list[tuple[Any, ...]]:
    cmds: list[tuple[Any, ...]] = []
    for i in range(p.partition_count):
        ks = keys.partition_keys(p.name, i)
        cmds.append(("UNLINK", *ks, keys.journal_key(p.name, i)))  # leftovers of a broken delete
        cmds.append(hset(ks[0], {**topic_config(p, i, gen), "subv": 0}))
        cmds.append(("HSET", ks[1], "acc", now_ms))
    cmds.append(("DEL", keys.subscriptions_index(p.name)))
    return cmds + idle_commands(p.name, p.auto_delete_on_idle, now_ms)


def topic_update_commands(p: TopicProperties, now_ms: int, gen: str = "") -> list[tuple[Any, ...]]:
    cmds: list[tuple[Any, ...]] = []
    for i in range(p.partition_count):
        ks = keys.partition_keys(p.name, i)
        cmds.append(hset(ks[0], topic_config(p, i, gen)))
        cmds.append(("HSET", ks[1], "acc", now_ms))
    return cmds + idle_commands(p.name, p.auto_delete_on_idle, now_ms)


def subscription_set_commands(
    topic: TopicProperties, s: SubscriptionProperties, now_ms: int, gen: str = ""
) -> list[tuple[Any, ...]]:
    """Write a subscription's config into every partition, announce it in the topic partitions'
    subscription set (bumping subv, so senders refresh), and touch both for idleness."""
    flag = int(bool(s.forward_to))  # a publish drains the subscriptions whose copies move on
    cmds: list[tuple[Any, ...]] = []
    for i in range(topic.partition_count):
        sk = keys.subscription_keys(topic.name, s.name, i)
        tk = keys.partition_keys(topic.name, i)
        cmds += owner_config_commands(sk, subscription_config(topic, s, i, gen))
        cmds.append(("HSET", sk[1], "acc", now_ms))
        cmds.append(("HSET", tk[0], f"sub:{s.name}", flag))
        cmds.append(("HINCRBY", tk[0], "subv", 1))
        cmds.append(("HSET", tk[1], "acc", now_ms))
    path = keys.subscription_path(topic.name, s.name)
    cmds.append(("HSET", keys.subscriptions_index(topic.name), s.name, 1))
    cmds += forwarder_commands(path, s.forward_to, s.forward_dead_lettered_messages_to)
    return cmds + idle_commands(path, s.auto_delete_on_idle, now_ms)


def subscription_create_commands(
    topic: TopicProperties,
    s: SubscriptionProperties,
    default_rule: tuple[RuleProperties, str, str | None] | None,
    now_ms: int,
    gen: str = "",
) -> list[tuple[Any, ...]]:
    cmds: list[tuple[Any, ...]] = []
    for i in range(topic.partition_count):
        sk = keys.subscription_keys(topic.name, s.name, i)
        cmds.append(("UNLINK", *owner_delete_keys(sk)))  # leftovers of a broken delete
    path = keys.subscription_path(topic.name, s.name)
    cmds.append(("DEL", keys.rules_index(path)))
    cmds += subscription_set_commands(topic, s, now_ms, gen)
    if default_rule is not None:
        cmds += rule_set_commands(topic, s.name, *default_rule, now_ms=now_ms)
        path = keys.rule_path(topic.name, s.name, default_rule[0].name)
        cmds.append(registry.put(path, dumps(rule_record(default_rule[0], now_ms))))
    return cmds


def subscription_delete_commands(topic: TopicProperties, name: str, rules: list[str]) -> list[tuple[Any, ...]]:
    cmds: list[tuple[Any, ...]] = []
    for i in range(topic.partition_count):
        sk = keys.subscription_keys(topic.name, name, i)
        tk = keys.partition_keys(topic.name, i)
        cmds.append(("UNLINK", *owner_delete_keys(sk)))
        cmds.append(("HDEL", tk[0], f"sub:{name}"))
        cmds.append(("HINCRBY", tk[0], "subv", 1))
    path = keys.subscription_path(topic.name, name)
    cmds.append(("HDEL", keys.subscriptions_index(topic.name), name))
    cmds.append(("DEL", keys.rules_index(path)))
    if rules:
        cmds.append(registry.remove(*(keys.rule_path(topic.name, name, r) for r in rules)))
    cmds.append(("ZREM", keys.IDLE, path))
    cmds.append(("HDEL", keys.FORWARDERS, path))
    return cmds


def topic_delete_commands(p: TopicProperties, subs: dict[str, list[str]]) -> list[tuple[Any, ...]]:
    """Everything of a topic: its partitions, every subscription (`subs`: name -> rule names)."""
    cmds: list[tuple[Any, ...]] = []
    for i in range(p.partition_count):
        all_keys: list[str] = [*keys.partition_keys(p.name, i), keys.journal_key(p.name, i)]
        for name in subs:
            all_keys += owner_delete_keys(keys.subscription_keys(p.name, name, i))
        cmds.append(("UNLINK", *all_keys))
    fields_: list[str] = []
    for name, rules in subs.items():
        path = keys.subscription_path(p.name, name)
        fields_.append(path)
        fields_ += [keys.rule_path(p.name, name, r) for r in rules]
        cmds.append(("DEL", keys.rules_index(path)))
        cmds.append(("ZREM", keys.IDLE, path))
        cmds.append(("HDEL", keys.FORWARDERS, path))
    if fields_:
        cmds.append(registry.remove(*fields_))
    cmds.append(("DEL", keys.subscriptions_index(p.name)))
    cmds.append(("ZREM", keys.IDLE, p.name))
    return cmds


def rule_set_commands(
    topic: TopicProperties, subscription: str, rule: RuleProperties, program: str, action: str | None, *, now_ms: int
) -> list[tuple[Any, ...]]:
    """Write a rule's programs into every partition of the subscription (a new rule counts as use)."""
    cmds: list[tuple[Any, ...]] = []
    for i in range(topic.partition_count):
        sk = keys.subscription_keys(topic.name, subscription, i)
        cmds.append(("HSET", sk[0], f"rf:{rule.name}", program))
        cmds.append(
            ("HDEL", sk[0], f"ra:{rule.name}") if action is None else ("HSET", sk[0], f"ra:{rule.name}", action)
        )
        cmds.append(("HSET", sk[1], "acc", now_ms))
        cmds.append(("HSET", keys.partition_keys(topic.name, i)[1], "acc", now_ms))
    cmds.append(("HSET", keys.rules_index(keys.subscription_path(topic.name, subscription)), rule.name, 1))
    return cmds


def rule_delete_commands(topic: TopicProperties, subscription: str, rule: str) -> list[tuple[Any, ...]]:
    cmds: list[tuple[Any, ...]] = []
    for i in range(topic.partition_count):
        sk = keys.subscription_keys(topic.name, subscription, i)
        cmds.append(("HDEL", sk[0], f"rf:{rule}", f"ra:{rule}"))
    cmds.append(("HDEL", keys.rules_index(keys.subscription_path(topic.name, subscription)), rule))
    return cmds
