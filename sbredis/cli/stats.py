"""`sbredis stats [ENTITY ...] [--watch [SECONDS]]`: message counts, refreshed, with rates.

With ``--watch`` the table is redrawn every SECONDS (default 2) until Ctrl-C, with how fast the
active and dead-letter counts change (messages per second, negative when draining); ``--json``
prints one JSON document per refresh (one per line), for scripts and dashboards.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from typing import Any

from . import _clients
from ._registry import ExitCode, Registry, UsageError
from .entities import rows
from .output import Output

COLUMNS = ("name", "kind", "active", "dead_letter", "scheduled", "transfer", "transfer_dead_letter", "size")
RATES = ("active_per_s", "dead_letter_per_s")


def register(cli: Registry) -> None:
    p = cli.command("stats", "message counts of every entity (or those named), refreshed with --watch", run)
    p.add_argument("entities", nargs="*", metavar="ENTITY", help="queues and topics (default: all)")
    p.add_argument(
        "-w", "--watch", nargs="?", type=float, const=2.0, metavar="SECONDS", help="refresh every SECONDS (2)"
    )
    p.add_argument("--iterations", type=int, help="with --watch: stop after this many refreshes")


def _rates(now: list[dict[str, Any]], before: dict[str, dict[str, Any]], seconds: float) -> None:
    for r in now:
        old = before.get(r["name"])
        for key, rate in (("active", "active_per_s"), ("dead_letter", "dead_letter_per_s")):
            if old is not None and r.get(key) is not None and old.get(key) is not None:
                r[rate] = round((r[key] - old[key]) / seconds, 1)


def run(args: argparse.Namespace, out: Output) -> int:
    if args.watch is not None and args.watch <= 0:
        raise UsageError("--watch takes a positive number of seconds")
    names = set(args.entities) or None
    clear = args.watch is not None and not out.json and sys.stdout.isatty()
    before: dict[str, dict[str, Any]] = {}
    taken = time.monotonic()
    n = 0
    with _clients.admin(args) as admin:
        try:
            while True:
                found = rows(admin, names)
                now = time.monotonic()
                if n:
                    _rates(found, before, now - taken)
                before, taken = {r["name"]: r for r in found}, now
                n += 1
                stamp = datetime.now(UTC).isoformat(timespec="seconds")
                if out.json:
                    out.emit({"time": stamp, "entities": found})
                else:
                    if clear:
                        print("\033[H\033[2J", end="")
                    if args.watch is not None:
                        out.say(f"{stamp}  (every {args.watch:g}s, Ctrl-C to stop)")
                    out.show(found, (*COLUMNS, *RATES) if n > 1 else COLUMNS)
                    if args.watch is not None:
                        out.say("")
                if names and not found:
                    out.warn(f"no entity named {', '.join(sorted(names))}")
                    return ExitCode.EMPTY
                if args.watch is None or (args.iterations is not None and n >= args.iterations):
                    return ExitCode.OK
                time.sleep(args.watch)
        except KeyboardInterrupt:
            return ExitCode.OK
