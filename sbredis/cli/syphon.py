"""`sbredis syphon --url PRIMARY --secondary SECONDARY`: run a paired namespace's syphon.

Moves the messages waiting in the secondary's backlog queues (``x-servicebus-transfer/<i>``) to
their destinations in the primary until Ctrl-C or SIGTERM (or ``--duration`` seconds), then prints
the counters (docs/paired-namespaces.md). A line on stderr says when it runs. Several may run at once.
``sbredis siphon`` is a deprecated alias (says so on stderr).
"""

from __future__ import annotations

import argparse
import os

from .._core.redact import redact
from ..paired import run_syphon
from ._registry import ExitCode, Registry, UsageError, require_url
from .output import Output

DEPRECATED_ALIAS = "siphon"


def register(cli: Registry) -> None:
    p = cli.command(
        "syphon",
        "move paired-namespace backlog messages from the secondary to the primary (--url), until Ctrl-C",
        run,
        aliases=[DEPRECATED_ALIAS],
    )
    p.add_argument(
        "--secondary",
        default=os.environ.get("SBREDIS_SECONDARY_URL"),
        help="the secondary's URL (default $SBREDIS_SECONDARY_URL)",
    )
    p.add_argument("--backlog-queue-count", type=int, default=10, metavar="N", help="backlog queues (10)")
    p.add_argument("--poll-interval", type=float, default=1.0, metavar="SECONDS", help="idle poll interval (1)")
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after SECONDS")


def run(args: argparse.Namespace, out: Output) -> int:
    if args.command == DEPRECATED_ALIAS:
        out.warn("`sbredis siphon` is deprecated: use `sbredis syphon` (same options)")
    primary = require_url(args)
    if not args.secondary:
        raise UsageError("give --secondary (or set SBREDIS_SECONDARY_URL)")
    if args.poll_interval <= 0 or (args.duration is not None and args.duration <= 0):
        raise UsageError("--poll-interval and --duration take a positive number of seconds")
    metrics = run_syphon(
        primary,
        args.secondary,
        args.backlog_queue_count,
        poll_interval=args.poll_interval,
        duration=args.duration,
        on_start=lambda: out.warn(f"syphon running: {redact(args.secondary)} -> {redact(primary)} (Ctrl-C stops it)"),
    ).as_dict()
    out.show([{"counter": k, "value": v} for k, v in metrics.items()], ("counter", "value"), data=metrics)
    return ExitCode.OK
