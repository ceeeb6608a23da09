"""`sbredis dlq resubmit | purge`: send dead-lettered messages back, or drop them.

resubmit (the library's ``sbredis.management.resubmit_dead_letters``) receives from the dead-letter
subqueue with peek-lock, sends a copy of each message (body, properties, message id) to the entity
and completes the dead-lettered message only after the send was stored: an interruption loses
nothing, but a message whose copy was stored and whose completion did not happen (interrupted in
between, lock lost) is resubmitted twice by the next run, unless the entity detects duplicates. On
an entity with duplicate detection a copy that is dropped as a duplicate (dead-lettered within the
detection window) is not stored, so its dead-lettered message stays where it is
(``--new-message-id`` gives copies new ids). A subscription's dead letters go back through its
topic (``--to TOPIC``), so every subscription whose rules match gets a copy, or to one subscription
only (``--to TOPIC:SUB``: the topic's rules and its other subscriptions are bypassed).

``--transfer-dlq`` works on the transfer dead-letter subqueue instead (messages that could not be
forwarded: a missing or disabled destination, too many hops).

purge receives and deletes in batches. Both stop after the number of messages the subqueue held
when they started (or ``--count``), so messages dead-lettered meanwhile are left alone, and both
take ``--dry-run`` (count and show, change nothing) and need ``--yes`` or a "y" on the terminal.

``sbredis purge ENTITY`` does the same to the entity's active messages (not those locked by a
receiver right now, nor deferred or scheduled ones).
"""

from __future__ import annotations

import argparse
from contextlib import closing
from typing import Any

from .. import ServiceBusClient, ServiceBusSubQueue
from .._message import ServiceBusReceivedMessage
from ..management import ServiceBusAdministrationClient, resubmit_dead_letters
from . import _clients, _purge
from ._registry import ExitCode, Registry, UsageError, add_yes, confirm
from .output import MESSAGE_COLUMNS, Output, Progress, message_dict, messages_table


def register(cli: Registry) -> None:
    g = cli.group("dlq", "resubmit or purge a dead-letter subqueue")
    for name, run, what in (
        ("resubmit", run_resubmit, "send dead-lettered messages back to their entity"),
        ("purge", run_purge, "delete dead-lettered messages"),
    ):
        p = g.command(name, what, run)
        p.add_argument("entity", help="QUEUE, TOPIC/Subscriptions/SUB or TOPIC:SUB")
        p.add_argument("-n", "--count", type=int, help="at most this many messages (default: all there now)")
        p.add_argument("--batch", type=int, default=100, help="messages per round trip (default 100)")
        p.add_argument("--dry-run", action="store_true", help="count and show the messages, change nothing")
        add_yes(p)
        p.add_argument(
            "--transfer-dlq",
            dest="sub_queue",
            action="store_const",
            const=ServiceBusSubQueue.TRANSFER_DEAD_LETTER,
            default=ServiceBusSubQueue.DEAD_LETTER,
            help="the transfer dead-letter subqueue (messages that could not be forwarded)",
        )
        if name == "resubmit":
            p.add_argument(
                "--to",
                help="the queue, topic, or one subscription (TOPIC/Subscriptions/SUB or TOPIC:SUB: only it gets "
                "the copies, the topic's rules bypassed) to send to (default: the queue; required for a subscription)",
            )
            p.add_argument("--new-message-id", action="store_true", help="give each copy a new message id")

    p = cli.command(
        "purge",
        "delete the active messages of a queue or subscription (not locked, deferred or scheduled ones)",
        run_purge,
    )
    p.add_argument("entity", help="QUEUE, TOPIC/Subscriptions/SUB or TOPIC:SUB")
    p.add_argument("-n", "--count", type=int, help="at most this many messages (default: all there now)")
    p.add_argument("--batch", type=int, default=100, help="messages per round trip (default 100)")
    p.add_argument("--dry-run", action="store_true", help="count and show the messages, change nothing")
    add_yes(p)
    p.set_defaults(sub_queue=None)


WHAT = {
    None: "active message(s)",
    ServiceBusSubQueue.DEAD_LETTER: "dead-lettered message(s)",
    ServiceBusSubQueue.TRANSFER_DEAD_LETTER: "transfer dead-lettered message(s)",
}
WHERE = {
    None: "",
    ServiceBusSubQueue.DEAD_LETTER: "the dead-letter subqueue of ",
    ServiceBusSubQueue.TRANSFER_DEAD_LETTER: "the transfer dead-letter subqueue of ",
}


def _count(admin: ServiceBusAdministrationClient, entity: str, sub_queue: ServiceBusSubQueue | None) -> int:
    topic, sub = _clients.split(entity)
    if sub is None:
        r: Any = admin.get_queue_runtime_properties(topic)
    else:
        r = admin.get_subscription_runtime_properties(topic, sub)
    if sub_queue is None:
        return int(r.active_message_count)
    if sub_queue is ServiceBusSubQueue.DEAD_LETTER:
        return int(r.dead_letter_message_count)
    return int(r.transfer_dead_letter_message_count)


def _check(args: argparse.Namespace) -> None:
    if (args.count is not None and args.count < 1) or not 1 <= args.batch <= 5000:
        raise UsageError("--count must be at least 1 and --batch between 1 and 5000")


def _peek_all(
    c: ServiceBusClient, entity: str, limit: int, sub_queue: ServiceBusSubQueue | None
) -> list[ServiceBusReceivedMessage]:
    msgs: list[ServiceBusReceivedMessage] = []
    # closing(), not the receiver's own `with`: opening a plain receiver on a session-enabled entity
    # is refused (as the SDK's), while browsing every session's messages is what a dry run shows
    with closing(_clients.receiver(c, entity, sub_queue=sub_queue)) as r:
        page = r.peek_messages(min(limit, 250), sequence_number=0)
        while page:
            msgs += page
            if len(msgs) >= limit:
                break
            page = r.peek_messages(min(limit - len(msgs), 250))
    return msgs[:limit]


def _dry_run(args: argparse.Namespace, out: Output, c: ServiceBusClient, limit: int, verb: str) -> int:
    msgs = _peek_all(c, args.entity, limit, args.sub_queue)
    if out.json:
        out.emit({"dry_run": True, f"would_{verb}": len(msgs), "messages": [message_dict(m) for m in msgs]})
    else:
        columns = (*MESSAGE_COLUMNS[:-1], "dead_letter_reason", "body") if args.sub_queue else MESSAGE_COLUMNS
        out.show(messages_table(msgs), columns)
        out.say(f"dry run: would {verb} {len(msgs)} {WHAT[args.sub_queue]} of {args.entity}; nothing changed")
    return ExitCode.OK if msgs else ExitCode.EMPTY


def _start(
    args: argparse.Namespace,
    out: Output,
    admin: ServiceBusAdministrationClient,
    c: ServiceBusClient,
    verbs: tuple[str, str],
    how: str,
) -> tuple[int, int | None]:
    """(how many messages to take, None) to go on, or (0, the exit code): a dry run, an empty
    subqueue, no confirmation."""
    verb, done = verbs
    there = _count(admin, args.entity, args.sub_queue)
    limit = min(there, args.count or there)
    if args.dry_run:
        return 0, _dry_run(args, out, c, limit, verb)
    if limit == 0:
        out.warn(
            f"{WHERE[args.sub_queue]}{args.entity} is empty"
            if args.sub_queue
            else f"{args.entity} has no active message"
        )
        if out.json:
            out.emit({done: 0})
        return 0, ExitCode.EMPTY
    if not confirm(args, f"{verb} {limit} {WHAT[args.sub_queue]} of {args.entity} {how}?"):
        out.warn(f"nothing {done}")
        return 0, ExitCode.ERROR
    return limit, None


def run_resubmit(args: argparse.Namespace, out: Output) -> int:
    _check(args)
    topic, sub = _clients.split(args.entity)
    if sub is not None and not args.to:
        raise UsageError(
            f"{args.entity} is a subscription: its dead letters go back through a topic, to every subscription "
            f"whose rules match (pass --to {topic}), or to one subscription only (pass --to {topic}:{sub})"
        )
    target = args.to or topic
    with _clients.admin(args) as admin, _clients.client(args) as c:
        limit, code = _start(args, out, admin, c, ("resubmit", "resubmitted"), f"to {target}")
        if code is not None:
            return code
        with Progress(f"resubmit {args.entity}", limit, Progress.wanted(args)) as bar:
            done = resubmit_dead_letters(
                c,
                admin,
                args.entity,
                target,
                sub_queue=args.sub_queue,
                max_message_count=limit,
                new_message_ids=args.new_message_id,
                batch_size=args.batch,
                on_progress=bar.advance,
            )
    counts = {
        "resubmitted": done.resubmitted,
        "kept_as_duplicates": done.kept_as_duplicates,
        "lock_lost": done.lock_lost,
    }
    if out.json:
        out.emit({"entity": args.entity, "to": target, **counts})
    else:
        out.say(f"resubmitted {done.resubmitted} message(s) of {WHERE[args.sub_queue]}{args.entity} to {target}")
    if done.kept_as_duplicates:
        out.warn(
            f"{done.kept_as_duplicates} copies were dropped by duplicate detection (same message id within "
            "the window): their messages stay in the dead-letter subqueue (--new-message-id resubmits them)"
        )
    if done.lock_lost:
        out.warn(
            f"{done.lock_lost} message(s) were resubmitted but their dead-letter lock was lost before they "
            "could be completed: they are still in the dead-letter subqueue (resubmitting again duplicates them)"
        )
    return ExitCode.OK


def run_purge(args: argparse.Namespace, out: Output) -> int:
    _check(args)
    with _clients.admin(args) as admin, _clients.client(args) as c:
        limit, code = _start(args, out, admin, c, ("purge", "purged"), "for good")
        if code is not None:
            return code
        sessions = args.sub_queue is None and _purge.requires_session(admin, args.entity)
        with Progress(f"purge {args.entity}", limit, Progress.wanted(args)) as bar:
            done = _purge.purge(
                c,
                args.entity,
                limit,
                sub_queue=args.sub_queue,
                sessions=sessions,
                batch=args.batch,
                on_progress=bar.advance,
            )
    if out.json:
        out.emit({"entity": args.entity, "purged": done.purged, **({"held_sessions": done.held} if done.held else {})})
    else:
        out.say(f"purged {done.purged} {WHAT[args.sub_queue]} of {args.entity}")
    if done.held:
        out.warn(f"{len(done.held)} session(s) held by a receiver were left as they were: {', '.join(done.held)}")
    return ExitCode.OK
