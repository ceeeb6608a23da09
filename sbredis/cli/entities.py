"""`sbredis entities list | show | create | update | delete`: queues, topics, subscriptions, rules.

Properties are set with ``--set name=value`` (the management model's field names, e.g.
``--set max_delivery_count=5 --set lock_duration=30``; durations in seconds, ``never`` for none,
booleans ``true``/``false``) and ``--partitions N`` (partitioned, N partitions).
"""

from __future__ import annotations

import argparse
import dataclasses
from datetime import timedelta
from enum import Enum
from typing import Any

from ..exceptions import MessagingEntityNotFoundError
from ..management import (
    CorrelationRuleFilter,
    QueueProperties,
    ServiceBusAdministrationClient,
    SqlRuleAction,
    SqlRuleFilter,
    SubscriptionProperties,
    TopicProperties,
    TrueRuleFilter,
)
from . import _clients
from ._registry import ExitCode, Registry, UsageError, add_yes, confirm
from .output import Output, plain

KINDS = ("queue", "topic", "subscription", "rule")
NEVER = timedelta(days=10675199, seconds=10085, microseconds=477581)  # TimeSpan.MaxValue
LIST_COLUMNS = (
    "name",
    "kind",
    "status",
    "partitions",
    "active",
    "dead_letter",
    "scheduled",
    "transfer",
    "transfer_dead_letter",
    "size",
)


def register(cli: Registry) -> None:
    g = cli.group("entities", "list, show, create, update and delete queues, topics, subscriptions and rules")
    g.command("list", "every queue, topic and subscription with its message counts", run_list)
    p = g.command("show", "an entity's properties and counts (per partition, with the node holding it)", run_show)
    p.add_argument("name", help="QUEUE, TOPIC, TOPIC/Subscriptions/SUB or TOPIC:SUB")
    for verb, run in (("create", run_create), ("update", run_update), ("delete", run_delete)):
        kinds = g.group(verb, f"{verb} a queue, topic, subscription or rule")
        for kind in KINDS:
            p = kinds.command(kind, f"{verb} a {kind}", run)
            p.set_defaults(kind=kind)
            if kind in ("subscription", "rule"):
                p.add_argument("topic")
            if kind == "rule":
                p.add_argument("subscription")
            p.add_argument("name")
            if verb == "delete":
                add_yes(p)
            elif kind == "rule":
                p.add_argument("--sql", help="a SQL filter (default: match everything)")
                p.add_argument(
                    "--correlation",
                    action="append",
                    default=[],
                    metavar="FIELD=VALUE",
                    help="a correlation filter field (correlation_id, subject, properties.NAME, ...)",
                )
                p.add_argument("--action", help="a SQL action (SET x = 1; REMOVE y)")
            else:
                p.add_argument(
                    "--set",
                    action="append",
                    default=[],
                    metavar="NAME=VALUE",
                    dest="settings",
                    help="a property (repeatable), e.g. max_delivery_count=5, lock_duration=30",
                )
                if verb == "create" and kind in ("queue", "topic"):
                    p.add_argument("--partitions", type=int, help="partitioned, with this many partitions")


# ----------------------------------------------------------------------------------- list / show
def _queue_row(r: Any) -> dict[str, Any]:
    return {
        "name": r.name,
        "kind": "queue",
        "partitions": len(r.partitions) + len(r.missing_partitions),
        "active": r.active_message_count,
        "dead_letter": r.dead_letter_message_count,
        "scheduled": r.scheduled_message_count,
        "transfer": r.transfer_message_count,
        "transfer_dead_letter": r.transfer_dead_letter_message_count,
        "size": r.size_in_bytes,
        "missing_partitions": list(r.missing_partitions),
    }


def rows(admin: ServiceBusAdministrationClient, names: set[str] | None = None) -> list[dict[str, Any]]:
    """A row of counts per queue, topic and subscription (only `names`, when given; a topic's name
    includes its subscriptions)."""
    out: list[dict[str, Any]] = []
    for q in admin.list_queues():
        if names is not None and q.name not in names:
            continue
        try:
            row = _queue_row(admin.get_queue_runtime_properties(q.name))
        except MessagingEntityNotFoundError:
            continue  # deleted meanwhile
        out.append({**row, "status": q.status})
    for t in admin.list_topics():
        if names is not None and t.name not in names:
            continue
        try:
            tr = admin.get_topic_runtime_properties(t.name)
            out.append(
                {
                    "name": t.name,
                    "kind": "topic",
                    "status": t.status,
                    "partitions": t.partition_count,
                    "scheduled": tr.scheduled_message_count,
                    "size": tr.size_in_bytes,
                    "subscriptions": tr.subscription_count,
                }
            )
            for s in admin.list_subscriptions(t.name):
                sr = admin.get_subscription_runtime_properties(t.name, s.name)
                out.append(
                    {
                        "name": f"{t.name}/Subscriptions/{s.name}",
                        "kind": "subscription",
                        "status": s.status,
                        "partitions": t.partition_count,
                        "active": sr.active_message_count,
                        "dead_letter": sr.dead_letter_message_count,
                        "transfer": sr.transfer_message_count,
                        "transfer_dead_letter": sr.transfer_dead_letter_message_count,
                    }
                )
        except MessagingEntityNotFoundError:
            continue
    return out


def run_list(args: argparse.Namespace, out: Output) -> int:
    with _clients.admin(args) as admin:
        found = rows(admin)
    if not found:
        out.say("no entities")
    out.show(found, LIST_COLUMNS)
    for r in found:
        if r.get("missing_partitions"):
            out.warn(f"{r['name']}: partitions {r['missing_partitions']} unreachable, counts are partial")
    return ExitCode.OK


def _properties_rows(props: Any) -> list[dict[str, Any]]:
    skip = {"name", "authorization_rules"}
    return [
        {"property": f.name, "value": getattr(props, f.name)} for f in dataclasses.fields(props) if f.name not in skip
    ]


def run_show(args: argparse.Namespace, out: Output) -> int:
    topic, sub = _clients.split(args.name)
    with _clients.admin(args) as admin:
        if sub is not None:
            props: Any = admin.get_subscription(topic, sub)
            runtime: Any = admin.get_subscription_runtime_properties(topic, sub)
            extra = {"rules": [plain(r) for r in admin.list_rules(topic, sub)]}
            kind = "subscription"
        else:
            try:
                props, kind = admin.get_queue(topic), "queue"
                runtime = admin.get_queue_runtime_properties(topic)
                extra = {}
            except MessagingEntityNotFoundError:
                props, kind = admin.get_topic(topic), "topic"
                runtime = admin.get_topic_runtime_properties(topic)
                extra = {"subscriptions": [s.name for s in admin.list_subscriptions(topic)]}
    if out.json:
        out.emit({"kind": kind, "properties": props, "runtime": runtime, **extra})
        return ExitCode.OK
    out.say(f"{kind} {args.name}")
    out.show(_properties_rows(props), ("property", "value"))
    counts = [f.name for f in dataclasses.fields(runtime) if f.name not in ("name", "partitions", "missing_partitions")]
    out.say("")
    out.show([{"count": k, "value": getattr(runtime, k)} for k in counts], ("count", "value"))
    if getattr(runtime, "partitions", None):
        out.say("")
        out.show(
            [
                {
                    "partition": p.partition_id,
                    "node": p.node,
                    "active": p.active_message_count,
                    "locked": p.locked_message_count,
                    "deferred": p.deferred_message_count,
                    "scheduled": p.scheduled_message_count,
                    "dead_letter": p.dead_letter_message_count,
                    "size": p.size_in_bytes,
                }
                for p in runtime.partitions
            ],
            ("partition", "node", "active", "locked", "deferred", "scheduled", "dead_letter", "size"),
        )
    if getattr(runtime, "missing_partitions", ()):
        out.warn(f"partitions {list(runtime.missing_partitions)} could not be reached: the counts are partial")
    for key, values in extra.items():
        out.say(f"{key}: " + (", ".join(v["name"] if isinstance(v, dict) else v for v in values) or "-"))
    return ExitCode.OK


# ----------------------------------------------------------------------- create / update / delete
def setting_value(model: type[Any], name: str, text: str) -> Any:
    """`text` as the type of `model`'s field `name` (raises UsageError for an unknown field)."""
    fields = {f.name: f for f in dataclasses.fields(model)}
    if name not in fields or name in ("name", "availability_status", "authorization_rules", "size_in_bytes"):
        settable = sorted(set(fields) - {"name", "availability_status", "authorization_rules", "size_in_bytes"})
        raise UsageError(f"unknown {model.__name__} property {name!r}; one of: {', '.join(settable)}")
    default = getattr(model.defaults(name="x"), name)
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "yes", "no", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "yes", "1")
        if isinstance(default, timedelta):
            return NEVER if text.lower() == "never" else timedelta(seconds=float(text))
        if isinstance(default, Enum):
            return type(default)(text)
        if isinstance(default, int):
            return int(text)
    except ValueError:
        raise UsageError(f"{name}: cannot use {text!r}") from None
    return None if text.lower() in ("", "none") else text


def _settings(model: type[Any], args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in args.settings:
        name, sep, text = item.partition("=")
        if not sep:
            raise UsageError(f"--set takes NAME=VALUE, not {item!r}")
        out[name.strip()] = setting_value(model, name.strip(), text.strip())
    if getattr(args, "partitions", None) is not None:
        out.update(enable_partitioning=True, partition_count=args.partitions)
    return out


def _correlation(items: list[str]) -> CorrelationRuleFilter:
    known = {f.name for f in dataclasses.fields(CorrelationRuleFilter)} - {"properties", "label"}
    kwargs: dict[str, Any] = {}
    props: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--correlation takes FIELD=VALUE, not {item!r}")
        if name.startswith("properties."):
            props[name.removeprefix("properties.")] = value
        elif name == "subject":
            kwargs["label"] = value
        elif name in known:
            kwargs[name] = value
        else:
            raise UsageError(
                f"unknown correlation field {name!r}; one of: subject, properties.NAME, " + ", ".join(sorted(known))
            )
    return CorrelationRuleFilter(**kwargs, properties=props or None)


def _rule_parts(args: argparse.Namespace) -> dict[str, Any]:
    if args.sql and args.correlation:
        raise UsageError("give --sql or --correlation, not both")
    parts: dict[str, Any] = {}
    if args.sql:
        parts["filter"] = SqlRuleFilter(args.sql)
    elif args.correlation:
        parts["filter"] = _correlation(args.correlation)
    if args.action:
        parts["action"] = SqlRuleAction(args.action)
    return parts


def run_create(args: argparse.Namespace, out: Output) -> int:
    with _clients.admin(args) as admin:
        created: Any
        if args.kind == "queue":
            created = admin.create_queue(args.name, **_settings(QueueProperties, args))
        elif args.kind == "topic":
            created = admin.create_topic(args.name, **_settings(TopicProperties, args))
        elif args.kind == "subscription":
            created = admin.create_subscription(args.topic, args.name, **_settings(SubscriptionProperties, args))
        else:
            parts = _rule_parts(args)
            created = admin.create_rule(
                args.topic,
                args.subscription,
                args.name,
                filter=parts.get("filter", TrueRuleFilter()),
                action=parts.get("action"),
            )
    return _done(out, "created", args, created)


def run_update(args: argparse.Namespace, out: Output) -> int:
    with _clients.admin(args) as admin:
        if args.kind == "queue":
            admin.update_queue(admin.get_queue(args.name), **_settings(QueueProperties, args))
            now: Any = admin.get_queue(args.name)
        elif args.kind == "topic":
            admin.update_topic(admin.get_topic(args.name), **_settings(TopicProperties, args))
            now = admin.get_topic(args.name)
        elif args.kind == "subscription":
            current = admin.get_subscription(args.topic, args.name)
            admin.update_subscription(args.topic, current, **_settings(SubscriptionProperties, args))
            now = admin.get_subscription(args.topic, args.name)
        else:
            parts = _rule_parts(args)
            if not parts:
                raise UsageError("give --sql, --correlation or --action")
            admin.update_rule(
                args.topic, args.subscription, admin.get_rule(args.topic, args.subscription, args.name), **parts
            )
            now = admin.get_rule(args.topic, args.subscription, args.name)
    return _done(out, "updated", args, now)


def _label(args: argparse.Namespace) -> str:
    if args.kind == "subscription":
        return f"subscription {args.topic}/Subscriptions/{args.name}"
    if args.kind == "rule":
        return f"rule {args.name} of {args.topic}/Subscriptions/{args.subscription}"
    return f"{args.kind} {args.name}"


def run_delete(args: argparse.Namespace, out: Output) -> int:
    with _clients.admin(args) as admin:
        _exists(admin, args)  # a missing entity: exit 3 before asking
        what = _label(args)
        extra = "" if args.kind == "rule" else " and all its messages"
        if not confirm(args, f"delete {what}{extra}?"):
            out.warn("not deleted")
            return ExitCode.ERROR
        if args.kind == "queue":
            admin.delete_queue(args.name)
        elif args.kind == "topic":
            admin.delete_topic(args.name)
        elif args.kind == "subscription":
            admin.delete_subscription(args.topic, args.name)
        else:
            admin.delete_rule(args.topic, args.subscription, args.name)
    if out.json:
        out.emit({"deleted": args.kind, "name": args.name})
    out.say(f"deleted {what}")
    return ExitCode.OK


def _exists(admin: ServiceBusAdministrationClient, args: argparse.Namespace) -> None:
    if args.kind == "queue":
        admin.get_queue(args.name)
    elif args.kind == "topic":
        admin.get_topic(args.name)
    elif args.kind == "subscription":
        admin.get_subscription(args.topic, args.name)
    else:
        admin.get_rule(args.topic, args.subscription, args.name)


def _done(out: Output, verb: str, args: argparse.Namespace, props: Any) -> int:
    if out.json:
        out.emit({verb: args.kind, "properties": props})
    else:
        out.say(f"{verb} {_label(args)}")
        out.show(_properties_rows(props), ("property", "value"))
    return ExitCode.OK


__all__ = ["register"]
