"""`sbredis send | receive | peek`: messages in and out of a queue, topic or subscription.

Entities are ``QUEUE``, ``TOPIC`` (send) and ``TOPIC/Subscriptions/SUB`` or ``TOPIC:SUB`` (receive,
peek). ``send`` takes the body as an argument, from ``--file`` or from stdin; ``--count N`` sends N
copies (each its own message id unless ``--message-id``) in batches, with a progress bar.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import closing
from datetime import UTC, datetime, timedelta
from typing import Any

from .. import ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode, ServiceBusSubQueue
from ..exceptions import MessagingEntityNotFoundError, ServiceBusError
from ..management import ServiceBusAdministrationClient
from . import _clients
from ._registry import ExitCode, Registry, UsageError, add_sub_queue
from .output import MESSAGE_COLUMNS, Output, Progress, message_dict, messages_table

SETTLE = ("complete", "abandon", "defer", "dead-letter", "ask")


def register(cli: Registry) -> None:
    p = cli.command("send", "send a message (or --count N of them) to a queue or topic", run_send)
    p.add_argument("entity", help="QUEUE or TOPIC")
    p.add_argument("body", nargs="?", help="the body (default: --file, else stdin)")
    p.add_argument("-f", "--file", help="read the body from this file ('-': stdin)")
    p.add_argument("-n", "--count", type=int, default=1, help="send this many copies (default 1)")
    p.add_argument("--batch", type=int, default=100, help="messages per send call (default 100)")
    p.add_argument(
        "-p",
        "--property",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an application property (repeatable; numbers and true/false are typed)",
    )
    for name in ("message-id", "session-id", "partition-key", "subject", "content-type", "correlation-id"):
        p.add_argument(f"--{name}")
    p.add_argument("--ttl", type=float, metavar="SECONDS", help="time to live")
    p.add_argument("--delay", type=float, metavar="SECONDS", help="schedule the messages this far ahead")

    p = cli.command("receive", "receive messages and settle them (interactively or by --settle)", run_receive)
    p.add_argument("entity", help="QUEUE, TOPIC/Subscriptions/SUB or TOPIC:SUB")
    p.add_argument("-n", "--count", type=int, default=1, help="messages to receive at most (default 1)")
    p.add_argument("--max-wait", type=float, default=5.0, help="seconds to wait for the first message (5)")
    p.add_argument("--mode", choices=("peek-lock", "receive-and-delete"), default="peek-lock")
    p.add_argument(
        "--settle",
        choices=SETTLE,
        help="what to do with each locked message (default: ask on a terminal, else abandon)",
    )
    p.add_argument("--reason", default="ManualDeadLetter", help="dead-letter reason for --settle dead-letter")
    add_sub_queue(p, "from")

    p = cli.command("peek", "show messages without locking or removing them", run_peek)
    p.add_argument("entity", help="QUEUE, TOPIC/Subscriptions/SUB or TOPIC:SUB")
    p.add_argument("-n", "--count", type=int, default=10, help="messages to show at most (default 10)")
    p.add_argument("--from-seq", type=int, default=0, help="the first sequence number (default: the lowest)")
    add_sub_queue(p, "from")


def sub_queue_of(args: argparse.Namespace) -> ServiceBusSubQueue | None:
    """The subqueue --dlq or --transfer-dlq named (None: the entity itself)."""
    return ServiceBusSubQueue(args.sub_queue) if getattr(args, "sub_queue", None) else None


# ----------------------------------------------------------------------------------------- send
def _body(args: argparse.Namespace) -> bytes:
    if args.body is not None and args.file is not None:
        raise UsageError("give the body as an argument or --file, not both")
    if args.body is not None:
        return str(args.body).encode()
    if args.file not in (None, "-"):
        try:
            with open(args.file, "rb") as f:
                return f.read()
        except OSError as e:
            raise UsageError(f"cannot read {args.file}: {e.strerror}") from None
    if args.file is None and sys.stdin.isatty():
        raise UsageError("give a BODY, --file FILE, or pipe the body on stdin")
    return sys.stdin.buffer.read()


def _typed(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (int, float, bool)) else text


def _properties(items: list[str]) -> dict[str | bytes, Any] | None:
    props: dict[str | bytes, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--property takes NAME=VALUE, not {item!r}")
        props[name] = _typed(value)
    return props or None


def _message(args: argparse.Namespace, body: bytes, props: dict[str | bytes, Any] | None) -> ServiceBusMessage:
    return ServiceBusMessage(
        body,
        application_properties=props,
        message_id=args.message_id,
        session_id=args.session_id,
        partition_key=args.partition_key,
        subject=args.subject,
        content_type=args.content_type,
        correlation_id=args.correlation_id,
        time_to_live=None if args.ttl is None else timedelta(seconds=args.ttl),
    )


def sender_for(c: ServiceBusClient, admin: ServiceBusAdministrationClient, name: str) -> Any:
    """A sender for a queue or a topic (whichever `name` is).

    Raises:
        MessagingEntityNotFoundError: neither exists.
    """
    try:
        admin.get_queue(name)
        return c.get_queue_sender(name)
    except MessagingEntityNotFoundError:
        admin.get_topic(name)
        return c.get_topic_sender(name)


def _send_all(
    sender: Any, args: argparse.Namespace, body: bytes, props: dict[str | bytes, Any] | None, bar: Progress
) -> list[int]:
    """Send --count messages in batches of --batch; the sequence numbers of scheduled ones."""
    sequence_numbers: list[int] = []
    left = args.count
    while left:
        batch = [_message(args, body, props) for _ in range(min(left, args.batch))]
        if args.delay is not None:
            sequence_numbers += sender.schedule_messages(batch, datetime.now(UTC) + timedelta(seconds=args.delay))
        else:
            sender.send_messages(batch)
        left -= len(batch)
        bar.advance(len(batch))
    return sequence_numbers


def run_send(args: argparse.Namespace, out: Output) -> int:
    if args.count < 1 or args.batch < 1:
        raise UsageError("--count and --batch must be at least 1")
    body = _body(args)
    props = _properties(args.property)
    _message(args, body, props)  # a bad property fails here, before anything is sent
    bar = Progress(f"send {args.entity}", args.count, args.count > 1 and Progress.wanted(args))
    with _clients.admin(args) as admin, _clients.client(args) as c, sender_for(c, admin, args.entity) as sender, bar:
        try:
            sequence_numbers = _send_all(sender, args, body, props, bar)
        except ServiceBusError:
            if args.count > 1:
                out.warn(f"sbredis: {bar.done} of {args.count} messages were sent before the error")
            raise
    if out.json:
        result: dict[str, Any] = {"entity": args.entity, "sent": args.count}
        if args.delay is not None:
            result["sequence_numbers"] = sequence_numbers
        out.emit(result)
    else:
        what = "scheduled" if args.delay is not None else "sent"
        out.say(
            f"{what} {args.count} message{'s' if args.count != 1 else ''} to {args.entity} ({len(body)} bytes each)"
        )
    return ExitCode.OK


# ----------------------------------------------------------------------------------- receive
def _ask(m: Any, out: Output) -> str:
    out.warn(
        f"#{m.sequence_number} id={m.message_id} delivery_count={m.delivery_count} subject={m.subject or '-'}\n"
        + (m.body_bytes or b"").decode("utf-8", "replace")
    )
    choices = {"c": "complete", "a": "abandon", "d": "dead-letter", "f": "defer", "s": "abandon", "": "abandon"}
    while True:
        print("[c]omplete [a]bandon [d]ead-letter de[f]er? ", end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if not line:
            return "abandon"  # end of input
        answer = line.strip().lower()[:1]
        if answer in choices:
            return choices[answer]


def _settle(receiver: Any, m: Any, how: str, reason: str) -> None:
    if how == "complete":
        receiver.complete_message(m)
    elif how == "abandon":
        receiver.abandon_message(m)
    elif how == "defer":
        receiver.defer_message(m)
    else:
        receiver.dead_letter_message(m, reason=reason, error_description="dead-lettered with sbredis receive")


def run_receive(args: argparse.Namespace, out: Output) -> int:
    if args.count < 1:
        raise UsageError("--count must be at least 1")
    delete = args.mode == "receive-and-delete"
    if delete and args.settle:
        raise UsageError("--settle applies to --mode peek-lock only")
    how = args.settle or ("ask" if sys.stdin.isatty() and not out.json else "abandon")
    mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE if delete else ServiceBusReceiveMode.PEEK_LOCK
    sub_queue = sub_queue_of(args)
    rows: list[dict[str, Any]] = []
    with _clients.client(args) as c, _clients.receiver(c, args.entity, receive_mode=mode, sub_queue=sub_queue) as r:
        wait = args.max_wait  # --max-wait 0: one look, without waiting
        msgs = r.receive_messages(args.count, max_wait_time=wait if wait != 0 else None, wait=wait != 0)
        while len(msgs) < args.count:  # what arrived at once, up to --count
            more = r.receive_messages(args.count - len(msgs), max_wait_time=0.2)
            if not more:
                break
            msgs += more
        for m in msgs:
            row = message_dict(m)
            if not delete:
                done = _ask(m, out) if how == "ask" else how
                _settle(r, m, done, args.reason)
                row["settled"] = done
            rows.append(row)
    if not rows:
        return _nothing(args, out)
    if out.json:
        out.emit(rows)
    else:
        table = messages_table(msgs)
        for t, full in zip(table, rows, strict=True):
            t["settled"] = full.get("settled", "deleted")
        out.show(table, (*MESSAGE_COLUMNS[:-1], "settled", "body"))
    return ExitCode.OK


def _nothing(args: argparse.Namespace, out: Output) -> int:
    where = {
        None: "",
        "deadletter": " (dead-letter subqueue)",
        "transferdeadletter": " (transfer dead-letter subqueue)",
    }
    out.warn(f"no message in {args.entity}{where[args.sub_queue]}")
    if out.json:
        out.emit([])
    return ExitCode.EMPTY


# -------------------------------------------------------------------------------------- peek
def run_peek(args: argparse.Namespace, out: Output) -> int:
    if args.count < 1 or args.from_seq < 0:
        raise UsageError("--count must be at least 1 and --from-seq not negative")
    sub_queue = sub_queue_of(args)
    # closing(), not the receiver's own `with`, which refuses a plain receiver on a session-enabled
    # entity as the SDK does: peeking every session's messages is what this command is for
    with _clients.client(args) as c, closing(_clients.receiver(c, args.entity, sub_queue=sub_queue)) as r:
        msgs = r.peek_messages(args.count, sequence_number=args.from_seq)
    if not msgs:
        return _nothing(args, out)
    if out.json:
        out.emit([message_dict(m) for m in msgs])
        return ExitCode.OK
    columns = (*MESSAGE_COLUMNS[:-1], "dead_letter_reason", "body") if sub_queue else MESSAGE_COLUMNS
    out.show(messages_table(msgs), columns)
    return ExitCode.OK
