# Generated from sbredis/aio/_admin_topics.py by scripts/unasync.py: edit the async source, not this.
"""Topics, subscriptions and rules for ServiceBusAdministrationClient (a mixin), plus the
maintenance that has no broker process to run it: auto-delete on idle and draining forwarding
outboxes.

Every change goes through ``Transport.change_entity``: the registry entry and every partition's
commands in one MULTI/EXEC on a standalone server, or partitions-then-registry on a cluster. A
subscription lives in its topic's partitions (``{sb:<topic>:<p>}:s:<name>:*``), so creating one
also bumps the topic partitions' ``subv``, which makes senders refresh their subscription sets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._admin_checks import addressed, check_forward_targets, forward_targets
from .._core import admin_commands, codec, fanout
from .._core import registry as registry_commands
from .._core.entity import GENERATION, check_name, from_mapping, new_generation
from .._core.keys import (
    FORWARDERS,
    IDLE,
    TRANSFER,
    rule_path,
    rules_index,
    subscription_path,
    subscriptions_index,
)
from .._core.protocol import idle, stats
from .._core.rules import CorrelationRuleFilter, TrueRuleFilter
from .._core.topic_entity import (
    DEFAULT_RULE,
    MAX_SUBSCRIPTIONS_PER_TOPIC,
    RuleProperties,
    SubscriptionProperties,
    TopicProperties,
    build_rule,
    build_subscription,
    build_topic,
    check_rule_name,
    check_subscription_name,
    dumps,
    from_record,
    kind_of,
    rule_delete_commands,
    rule_from_record,
    rule_record,
    rule_set_commands,
    subscription_create_commands,
    subscription_delete_commands,
    subscription_set_commands,
    to_record,
    topic_create_commands,
    topic_delete_commands,
    topic_update_commands,
)
from .._topic_models import SubscriptionRuntimeProperties, TopicRuntimeProperties
from ..exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessagingEntityAlreadyExistsError,
    MessagingEntityNotFoundError,
    ServiceBusError,
    ServiceBusQuotaExceededError,
)
from ._forwarder import Forwarder
from ._registry import Registry

if TYPE_CHECKING:
    from ._transport import Transport

log = logging.getLogger("sbredis")
MAINTENANCE_INTERVAL = 30.0  # seconds between automatic maintenance runs of one client
IDLE_BATCH = 100  # idle candidates examined per maintenance run


def _name(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class TopicAdministration:
    """Topic, subscription and rule administration (azure.servicebus.management names)."""

    _transport: Transport
    _registry: Registry
    _maintained_at: float = 0.0

    def _server_ms(self) -> int:
        sec, usec = self._transport.execute("TIME")
        return int(sec) * 1000 + int(usec) // 1000

    def _entry(self, path: str, kind: str) -> dict[str, Any]:
        rec = self._registry.get(path)
        if rec is None or kind_of(rec) != kind:
            raise MessagingEntityNotFoundError(f"The messaging entity '{path}' was not found.")
        return dict(rec)

    def _topic_entry(self, topic_name: str) -> tuple[TopicProperties, dict[str, Any]]:
        rec = self._entry(check_name(topic_name, "topic"), "topic")
        return from_record(TopicProperties, rec), rec

    def _names(self, index: str) -> list[str]:
        return sorted(_name(n) for n in self._transport.execute("HKEYS", index))

    def _subscriptions_with_rules(self, topic: str) -> dict[str, list[str]]:
        out = {}
        for name in self._names(subscriptions_index(topic)):
            out[name] = self._names(rules_index(subscription_path(topic, name)))
        return out

    def _change(self, path: str, registry: tuple[Any, ...], cmds: list[tuple[Any, ...]], create: bool) -> None:
        if not self._transport.change_entity(path, registry, cmds, create=create):
            raise MessagingEntityAlreadyExistsError(f"The messaging entity '{path}' already exists.")

    # ------------------------------------------------------------------------------ topics
    def create_topic(self, topic_name: str, **kwargs: Any) -> TopicProperties:
        """Create a topic; keyword arguments are TopicProperties fields.

        Raises:
            InvalidArgumentError / InvalidOperationError: bad or unsupported properties.
            MessagingEntityAlreadyExistsError: a queue or topic of that name exists.
        """
        p = build_topic(topic_name, **kwargs)
        now = self._server_ms()
        gen = new_generation()
        registry = registry_commands.put(p.name, dumps(to_record(p, "topic", _c=now, _u=now, _g=gen)))
        self._change(p.name, registry, topic_create_commands(p, now, gen), True)
        return p

    def get_topic(self, topic_name: str) -> TopicProperties:
        """Raises MessagingEntityNotFoundError when there is no such topic."""
        p, _ = self._topic_entry(topic_name)
        return p

    def update_topic(self, topic: TopicProperties, **kwargs: Any) -> None:
        """Apply `topic`'s properties (and keyword overrides) to the existing topic.

        Raises:
            InvalidOperationError: enable_partitioning or partition_count would change.
            MessagingEntityNotFoundError: no such topic.
        """
        topic = from_mapping(TopicProperties, topic, "update_topic")
        current, rec = self._topic_entry(topic.name)
        wanted = replace(topic, **{k: v for k, v in kwargs.items() if k in ("enable_partitioning", "partition_count")})
        if wanted.enable_partitioning != current.enable_partitioning or (
            wanted.partition_count and wanted.partition_count != current.partition_count
        ):
            raise InvalidOperationError("enable_partitioning and partition_count cannot change after creation")
        kwargs.pop("enable_partitioning", None)
        kwargs.pop("partition_count", None)
        p = build_topic(topic.name, base=replace(topic, partition_count=current.partition_count), **kwargs)
        now = self._server_ms()
        gen = str(rec.get(GENERATION) or "")
        record = to_record(p, "topic", _c=rec.get("_c", now), _u=now, _g=gen)
        registry = registry_commands.put(p.name, dumps(record))
        self._change(p.name, registry, topic_update_commands(p, now, gen), False)

    def delete_topic(self, topic: str | TopicProperties) -> None:
        """Delete the topic, its subscriptions and all their messages.

        Raises:
            MessagingEntityNotFoundError: no such topic.
        """
        name = topic.name if isinstance(topic, TopicProperties) else topic
        p, _ = self._topic_entry(name)
        subs = self._subscriptions_with_rules(p.name)
        self._change(p.name, registry_commands.remove(p.name), topic_delete_commands(p, subs), False)

    def list_topics(self) -> Iterator[TopicProperties]:
        """Every topic, by name."""
        records = self._registry.all()
        for name in sorted(records):
            rec = records[name]
            if kind_of(rec) == "topic":
                yield from_record(TopicProperties, rec)

    def get_topic_runtime_properties(self, topic_name: str) -> TopicRuntimeProperties:
        """The topic's counts (one pipelined read-only call per partition of the topic and of
        each subscription).

        Raises:
            MessagingEntityNotFoundError: no such topic.
        """
        self._maintain()
        p, rec = self._topic_entry(topic_name)
        subs = self._names(subscriptions_index(p.name))
        calls = [stats.call(p.name, i) for i in range(p.partition_count)]
        calls += [stats.call(subscription_path(p.name, s), i) for s in subs for i in range(p.partition_count)]
        replies = self._transport.run_many(calls, p.name)
        size = scheduled = accessed = 0
        for i, r in enumerate(replies):
            if isinstance(r, ServiceBusError):
                if isinstance(r, MessagingEntityNotFoundError) and i >= p.partition_count:
                    continue  # a subscription deleted meanwhile
                raise r
            st = stats.parse(r)
            accessed = max(accessed, st[8])
            if i < p.partition_count:
                scheduled += st[3]
            else:
                size += st[7]
        return TopicRuntimeProperties(
            name=p.name,
            created_at_utc=codec.from_ms(rec["_c"]) if "_c" in rec else None,
            updated_at_utc=codec.from_ms(rec["_u"]) if "_u" in rec else None,
            # not used since its creation: the creation time, as Service Bus reports it
            accessed_at_utc=codec.from_ms(accessed or rec["_c"]) if accessed or "_c" in rec else None,
            size_in_bytes=size,
            subscription_count=len(subs),
            scheduled_message_count=scheduled,
            **self._filter_counts(p.name, subs),
        )

    def _filter_counts(self, topic: str, subs: list[str]) -> dict[str, int]:
        """The topic's rules by kind of filter, over its subscriptions (true and false filters
        are SQL filters, as on Service Bus)."""
        paths = []
        for sub in subs:
            paths += [rule_path(topic, sub, n) for n in self._names(rules_index(subscription_path(topic, sub)))]
        correlation = total = 0
        for rec in self._registry.get_many(paths) if paths else []:
            if rec is not None:
                total += 1
                correlation += isinstance(rule_from_record(rec).filter, CorrelationRuleFilter)
        return {"sql_filter_count": total - correlation, "correlation_filter_count": correlation}

    def list_topics_runtime_properties(self) -> Iterator[TopicRuntimeProperties]:
        for t in self.list_topics():
            yield self.get_topic_runtime_properties(t.name)

    # ----------------------------------------------------------------------- subscriptions
    def _subscription_entry(
        self, topic_name: str, subscription_name: str
    ) -> tuple[SubscriptionProperties, dict[str, Any]]:
        check_name(topic_name, "topic")
        check_subscription_name(subscription_name)
        rec = self._entry(subscription_path(topic_name, subscription_name), "subscription")
        return from_record(SubscriptionProperties, rec), rec

    @staticmethod
    def _subscription_record(
        t: TopicProperties, s: SubscriptionProperties, created: int, updated: int, gen: str
    ) -> str:
        rec = to_record(
            s,
            "subscription",
            _t=t.name,
            _pc=t.partition_count,
            _mb=t.max_message_size_in_kilobytes * 1024,
            _c=created,
            _u=updated,
            _g=gen,
        )
        return dumps(rec)

    def create_subscription(
        self, topic_name: str, subscription_name: str, **kwargs: Any
    ) -> SubscriptionProperties:
        """Create a subscription with the ``$Default`` rule (a TrueRuleFilter); keyword arguments are
        SubscriptionProperties fields.

        Raises:
            InvalidArgumentError / InvalidOperationError: bad or unsupported properties.
            MessagingEntityNotFoundError: no such topic, or forward_to or forward_dead_lettered_messages_to
                names no entity.
            MessagingEntityAlreadyExistsError: the topic has a subscription of that name.
            ServiceBusQuotaExceededError: the topic has MAX_SUBSCRIPTIONS_PER_TOPIC (2,000)
                subscriptions already (Service Bus's quota); nothing is written.
        """
        t, _ = self._topic_entry(topic_name)
        s = build_subscription(t.name, subscription_name, **kwargs)
        targets = forward_targets(s)
        check_forward_targets(targets, self._registry.get_many(targets))
        self._check_subscription_quota(t.name)
        now = self._server_ms()
        path = subscription_path(t.name, s.name)
        default = build_rule(DEFAULT_RULE, TrueRuleFilter())
        gen = new_generation()
        cmds = subscription_create_commands(t, s, default, now, gen)
        record = self._subscription_record(t, s, now, now, gen)
        self._change(path, registry_commands.put(path, record), cmds, True)
        return addressed(s, self._transport.namespace)

    def _check_subscription_quota(self, topic: str) -> None:
        # Checked before the write, not inside it: two creates racing past 1,999 can both pass,
        # one over the cap at most per concurrent creator (a publish stays bounded near the cap).
        count = int(self._transport.execute("HLEN", subscriptions_index(topic)))
        if count >= MAX_SUBSCRIPTIONS_PER_TOPIC:
            raise ServiceBusQuotaExceededError(
                f"The topic '{topic}' has {count} subscriptions, the maximum is {MAX_SUBSCRIPTIONS_PER_TOPIC}; "
                "delete one before creating another."
            )

    def get_subscription(self, topic_name: str, subscription_name: str) -> SubscriptionProperties:
        """Raises MessagingEntityNotFoundError when there is no such subscription."""
        s, _ = self._subscription_entry(topic_name, subscription_name)
        return addressed(s, self._transport.namespace)

    def update_subscription(self, topic_name: str, subscription: SubscriptionProperties, **kwargs: Any) -> None:
        """Apply `subscription`'s properties (and keyword overrides) to the existing subscription.

        Raises:
            MessagingEntityNotFoundError: no such topic or subscription, or forward_to or
                forward_dead_lettered_messages_to names no entity.
            InvalidOperationError: requires_session would change.
        """
        subscription = from_mapping(SubscriptionProperties, subscription, "update_subscription")
        t, _ = self._topic_entry(topic_name)
        _, rec = self._subscription_entry(t.name, subscription.name)
        if bool(kwargs.get("requires_session", subscription.requires_session)) != bool(rec.get("requires_session")):
            raise InvalidOperationError("requires_session cannot change after creation")
        s = build_subscription(t.name, subscription.name, base=subscription, **kwargs)
        targets = forward_targets(s)
        check_forward_targets(targets, self._registry.get_many(targets))
        now = self._server_ms()
        path = subscription_path(t.name, s.name)
        gen = str(rec.get(GENERATION) or "")
        registry = registry_commands.put(path, self._subscription_record(t, s, rec.get("_c", now), now, gen))
        self._change(path, registry, subscription_set_commands(t, s, now, gen), False)

    def delete_subscription(self, topic_name: str, subscription: str | SubscriptionProperties) -> None:
        """Delete the subscription and its messages.

        Raises:
            MessagingEntityNotFoundError: no such topic or subscription.
        """
        name = subscription.name if isinstance(subscription, SubscriptionProperties) else subscription
        t, _ = self._topic_entry(topic_name)
        self._subscription_entry(t.name, name)
        path = subscription_path(t.name, name)
        rules = self._names(rules_index(path))
        self._change(path, registry_commands.remove(path), subscription_delete_commands(t, name, rules), False)

    def list_subscriptions(self, topic_name: str) -> Iterator[SubscriptionProperties]:
        """The topic's subscriptions, by name.

        Raises:
            MessagingEntityNotFoundError: no such topic.
        """
        t, _ = self._topic_entry(topic_name)
        names = self._names(subscriptions_index(t.name))
        if not names:
            return
        for rec in self._registry.get_many(subscription_path(t.name, n) for n in names):
            if rec is not None:
                yield addressed(from_record(SubscriptionProperties, rec), self._transport.namespace)

    def get_subscription_runtime_properties(
        self, topic_name: str, subscription_name: str
    ) -> SubscriptionRuntimeProperties:
        """Counts summed over partitions, with the transfer queue (forwarding outbox) and the transfer
        dead-letter subqueue.

        Raises:
            MessagingEntityNotFoundError: no such topic or subscription.
        """
        self._maintain()
        s, rec = self._subscription_entry(topic_name, subscription_name)
        path = subscription_path(topic_name, s.name)
        counts = self._owner_counts(path, int(rec["_pc"]))
        active, dead, transfer, transfer_dead, accessed = counts
        return SubscriptionRuntimeProperties(
            name=s.name,
            created_at_utc=codec.from_ms(rec["_c"]) if "_c" in rec else None,
            updated_at_utc=codec.from_ms(rec["_u"]) if "_u" in rec else None,
            # not used since its creation: the creation time, as Service Bus reports it
            accessed_at_utc=codec.from_ms(accessed or rec["_c"]) if accessed or "_c" in rec else None,
            total_message_count=active + dead + transfer + transfer_dead,
            active_message_count=active,
            dead_letter_message_count=dead,
            transfer_message_count=transfer,
            transfer_dead_letter_message_count=transfer_dead,
        )

    def _owner_counts(self, path: str, partitions: int) -> tuple[int, int, int, int, int]:
        """(active, dead-letter, transfer, transfer dead-letter, last access) of a queue or subscription."""
        calls = [stats.call(path, i) for i in range(partitions)]
        calls += [stats.call(path + TRANSFER, i) for i in range(partitions)]
        active = dead = transfer = transfer_dead = accessed = 0
        for i, r in enumerate(self._transport.run_many(calls, path)):
            if isinstance(r, ServiceBusError):
                if i >= partitions and isinstance(r, MessagingEntityNotFoundError):
                    continue  # an entity created before transfer queues existed
                raise r
            st = stats.parse(r)
            if i < partitions:
                active += st[0] + st[1] + st[2]
                dead += st[4] + st[5] + st[6]
                accessed = max(accessed, st[8])
            else:
                transfer += st[0] + st[1] + st[2]
                transfer_dead += st[4] + st[5] + st[6]
        return active, dead, transfer, transfer_dead, accessed

    def _transfer_counts(self, path: str, partitions: int) -> tuple[int, int]:
        """(messages waiting to be forwarded, transfer dead-letter messages); partitions that cannot
        be read count 0."""
        calls = [stats.call(path + TRANSFER, i) for i in range(partitions)]
        transfer = transfer_dead = 0
        for r in self._transport.run_many(calls, path):
            if not isinstance(r, ServiceBusError):
                st = stats.parse(r)
                transfer += st[0] + st[1] + st[2]
                transfer_dead += st[4] + st[5] + st[6]
        return transfer, transfer_dead

    def list_subscriptions_runtime_properties(
        self, topic_name: str
    ) -> Iterator[SubscriptionRuntimeProperties]:
        for s in self.list_subscriptions(topic_name):
            yield self.get_subscription_runtime_properties(topic_name, s.name)

    # ------------------------------------------------------------------------------- rules
    def create_rule(
        self,
        topic_name: str,
        subscription_name: str,
        rule_name: str,
        *,
        filter: Any = None,
        action: Any = None,
        **kw: Any,
    ) -> RuleProperties:
        """Add a rule to a subscription: `filter` a SqlRuleFilter, CorrelationRuleFilter,
        TrueRuleFilter or FalseRuleFilter (default: true), `action` a SqlRuleAction. The filter and
        action are compiled now; a message is evaluated against them when the topic fans it out.

        Raises:
            RuleSyntaxError: the SQL does not parse (its message names the position).
            RuleCompileError / InvalidArgumentError: another compile error or a bad argument.
            MessagingEntityNotFoundError: no such topic or subscription.
            MessagingEntityAlreadyExistsError: the subscription has a rule of that name.
        """
        if kw:
            raise InvalidArgumentError(f"unknown rule options: {', '.join(sorted(kw))}")
        rule, program, action_program = build_rule(rule_name, filter, action)
        t, _ = self._topic_entry(topic_name)
        self._subscription_entry(t.name, subscription_name)
        now = self._server_ms()
        rule.created_at_utc = codec.from_ms(now)
        path = rule_path(t.name, subscription_name, rule.name)
        cmds = rule_set_commands(t, subscription_name, rule, program, action_program, now_ms=now)
        self._change(path, registry_commands.put(path, dumps(rule_record(rule, now))), cmds, True)
        return rule

    def get_rule(self, topic_name: str, subscription_name: str, rule_name: str) -> RuleProperties:
        """Raises MessagingEntityNotFoundError when there is no such rule."""
        check_name(topic_name, "topic")
        check_subscription_name(subscription_name)
        rec = self._entry(rule_path(topic_name, subscription_name, check_rule_name(rule_name)), "rule")
        return rule_from_record(rec)

    def update_rule(self, topic_name: str, subscription_name: str, rule: RuleProperties, **kwargs: Any) -> None:
        """Replace a rule's filter and action with `rule`'s (keyword overrides: filter, action).

        Raises:
            As create_rule; MessagingEntityNotFoundError when there is no such rule.
        """
        rule = from_mapping(RuleProperties, rule, "update_rule")
        unknown = set(kwargs) - {"filter", "action"}
        if unknown:
            raise InvalidArgumentError(f"unknown rule options: {', '.join(sorted(unknown))}")
        new, program, action_program = build_rule(
            rule.name, kwargs.get("filter", rule.filter), kwargs.get("action", rule.action)
        )
        t, _ = self._topic_entry(topic_name)
        path = rule_path(t.name, subscription_name, rule.name)
        rec = self._entry(path, "rule")
        now = self._server_ms()
        cmds = rule_set_commands(t, subscription_name, new, program, action_program, now_ms=now)
        self._change(path, registry_commands.put(path, dumps(rule_record(new, rec.get("_c", now)))), cmds, False)

    def delete_rule(self, topic_name: str, subscription_name: str, rule: str | RuleProperties) -> None:
        """Remove a rule (a subscription without rules receives nothing).

        Raises:
            MessagingEntityNotFoundError: no such rule.
        """
        name = rule.name if isinstance(rule, RuleProperties) else rule
        t, _ = self._topic_entry(topic_name)
        path = rule_path(t.name, subscription_name, check_rule_name(name))
        self._entry(path, "rule")
        self._change(
            path, registry_commands.remove(path), rule_delete_commands(t, subscription_name, name), False
        )

    def list_rules(self, topic_name: str, subscription_name: str) -> Iterator[RuleProperties]:
        """The subscription's rules, by name.

        Raises:
            MessagingEntityNotFoundError: no such topic or subscription.
        """
        self._subscription_entry(topic_name, subscription_name)
        names = self._names(rules_index(subscription_path(topic_name, subscription_name)))
        if not names:
            return
        for rec in self._registry.get_many(rule_path(topic_name, subscription_name, n) for n in names):
            if rec is not None:
                yield rule_from_record(rec)

    # ------------------------------------------------------------------------ maintenance
    def _maintain(self) -> None:
        """Delete idle entities and drain forwarding outboxes, at most every MAINTENANCE_INTERVAL
        seconds per client (the runtime-property calls run it); failures are logged."""
        now = time.monotonic()
        if now - self._maintained_at < MAINTENANCE_INTERVAL:
            return
        self._maintained_at = now
        try:
            self.delete_idle_entities()
            self.forward_pending()
        except ServiceBusError as e:
            log.warning("sbredis maintenance failed: %s", e)

    def forward_pending(self) -> int:
        """Drain the outbox of every forwarding queue and subscription (a fallback for forwards that
        no sender or receiver completed: a process that died, scheduled or dead-lettered messages).
        Returns how many messages were delivered."""
        return Forwarder(self._transport).drain_all()

    def delete_idle_entities(self) -> list[str]:
        """Delete the queues, topics and subscriptions whose auto_delete_on_idle passed without use.

        Candidates come from ``{sb:entities}:idle`` (entity -> the earliest time it may be idle),
        never from a keyspace scan. Each candidate's partitions are checked first (last use:
        sends, receives, peeks, updates, pending scheduled messages; a forwarding entity is never
        idle; a topic is used while any subscription is), then taken out of service (status
        Disabled) only if still idle, then deleted; if any partition was used meanwhile, the
        others are put back. Returns the paths deleted.
        """
        now = self._server_ms()
        candidates = self._transport.execute("ZRANGEBYSCORE", IDLE, "-inf", now, "LIMIT", 0, IDLE_BATCH)
        deleted = []
        for raw in candidates:
            path = _name(raw)
            try:
                if self._delete_if_idle(path, now):
                    deleted.append(path)
            except ServiceBusError as e:
                log.warning("auto-delete-on-idle check of %s failed: %s", path, e)
        return deleted

    def _delete_if_idle(self, path: str, now: int) -> bool:
        rec = self._registry.get(path)
        window = fanout.window_ms(rec) if rec is not None else 0
        if rec is None or not window:
            self._transport.execute("ZREM", IDLE, path)
            return False
        kind = kind_of(rec)
        partitions = int(rec["_pc"] if kind == "subscription" else rec["partition_count"])
        subs = self._names(subscriptions_index(path)) if kind == "topic" else []
        cutoff = now - window

        def run(mode: str) -> list[Any]:
            calls = [idle.call(path, kind, p, subs, mode, cutoff) for p in range(partitions)]
            return list(self._transport.run_many(calls, path))

        def still_used(replies: list[Any]) -> int | None:
            for r in replies:
                if isinstance(r, ServiceBusError):
                    raise r
            parsed = [idle.parse(r) for r in replies]
            if all(is_idle for is_idle, _ in parsed):
                return None
            return max(last for _, last in parsed)

        last = still_used(run("check"))
        if last is None:
            retired = run("retire")
            try:
                last = still_used(retired)
            except ServiceBusError:
                run("restore")
                raise
            if last is not None:
                run("restore")
        if last is not None:
            self._transport.execute("ZADD", IDLE, last + window, path)
            return False
        self._delete_entity(path, kind, rec, partitions)
        log.info("deleted %s '%s' after auto_delete_on_idle", kind, path)
        return True

    def _delete_entity(self, path: str, kind: str, rec: dict[str, Any], partitions: int) -> None:
        registry = registry_commands.remove(path)
        if kind == "topic":
            t = from_record(TopicProperties, rec)
            cmds = topic_delete_commands(t, self._subscriptions_with_rules(path))
        elif kind == "subscription":
            t, _ = self._topic_entry(str(rec["_t"]))
            name = path.rsplit("/", 1)[1]
            cmds = subscription_delete_commands(t, name, self._names(rules_index(path)))
        else:
            cmds = [*admin_commands.delete_commands(path, partitions), ("ZREM", IDLE, path), ("HDEL", FORWARDERS, path)]
        self._transport.change_entity(path, registry, cmds)
