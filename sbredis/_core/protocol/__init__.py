"""One module per Lua script: the only code that knows a script's name, KEYS, ARGV order and reply.

Each module (named after its script in lua/) has ``NAME``, ``ARGV`` (the leading fixed arguments,
as the script's header names them), builders returning a :class:`~.base.Call` and reply parsers.
The shells run the calls and never build arguments. siphon_lease (paired namespaces) is built in
sbredis/_core/paired.py.

    base                    Call, Group and Mode (wire codes), partition_call, stamped, stamp, SWEEP_LIMIT
    send                    store a batch in one partition        (sequence numbers)
    cancel_scheduled        cancel scheduled messages of a partition
    receive                 lock or take messages                 (messages; receive_deferred's and
                                                                   session_receive's reply too)
    receive_deferred        take deferred messages by number
    peek                    read without locking
    probe                   how many a receive could take
    complete, abandon,      settle held locks (_held: the shared lock-argument layout and status reply)
    defer, dead_letter,
    renew
    stats                   counts and size of a partition
    publish                 fan out to subscriptions              (TopicSubs, the stale answer)
    cancel_topic_scheduled  cancel a topic's scheduled messages
    forward_out, forward_in, forward_ack    the forwarding outbox (OutboxEntry)
    idle                    auto-delete-on-idle
    tx_commit               a transaction's commit
    session_lock, session_receive, session_renew, session_release, session_state, session_list
    dashboard_counts        many partitions' counts at once (its own KEYS layout: 18 keys a partition)
"""

from __future__ import annotations

from . import (
    abandon,
    cancel_scheduled,
    cancel_topic_scheduled,
    complete,
    dashboard_counts,
    dead_letter,
    defer,
    forward_ack,
    forward_in,
    forward_out,
    idle,
    peek,
    probe,
    publish,
    receive,
    receive_deferred,
    renew,
    send,
    session_list,
    session_lock,
    session_receive,
    session_release,
    session_renew,
    session_state,
    stats,
    tx_commit,
)
from .base import Call, Group, Mode, group_of, mode_of, stamp, stamped

MODULES = {
    m.NAME: m
    for m in (
        send,
        cancel_scheduled,
        receive,
        receive_deferred,
        complete,
        abandon,
        defer,
        dead_letter,
        renew,
        peek,
        stats,
        probe,
        publish,
        cancel_topic_scheduled,
        forward_out,
        forward_in,
        forward_ack,
        idle,
        tx_commit,
        session_lock,
        session_receive,
        session_renew,
        session_release,
        session_state,
        session_list,
        dashboard_counts,
    )
}
"""Script name -> its protocol module (every script of scripts.SCRIPT_NAMES but siphon_lease)."""

SETTLE = {m.NAME: m for m in (complete, abandon, defer, dead_letter, renew)}
"""Settlement script name -> its protocol module (each has call(entity, partition, group, msgs, *extra), apply)."""

__all__ = ["MODULES", "SETTLE", "Call", "Group", "Mode", "group_of", "mode_of", "stamp", "stamped"]
