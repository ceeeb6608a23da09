"""`sbredis metrics --port P [--entity PATH ...]`: a Prometheus endpoint (sbredis/observability/exporter.py).

Needs the ``prometheus`` extra; imported only when the command runs.
"""

from __future__ import annotations

import argparse

from ._registry import ExitCode, Registry, UsageError, require_url
from .output import Output


def register(cli: Registry) -> None:
    p = cli.command(
        "metrics",
        "serve Prometheus metrics: per-entity message counts and this process's client metrics",
        run,
        description="Serve /metrics until SIGTERM or Ctrl-C: gauges per queue and subscription (active, locked, "
        "deferred, scheduled, dead-lettered, size), read with one stats call per partition at most once per "
        "--max-age seconds, and this process's sbredis client metrics. Needs sbredis[prometheus].",
    )
    p.add_argument("--port", type=int, required=True, help="TCP port for /metrics (0: any free port)")
    p.add_argument(
        "--entity",
        action="append",
        metavar="PATH",
        help="a queue or TOPIC/Subscriptions/SUB to report (repeatable; default: every queue and subscription)",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--max-age", type=float, default=5.0, help="seconds one refresh serves scrapes (default 5)")


def run(args: argparse.Namespace, out: Output) -> int:
    url = require_url(args)
    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be between 0 and 65535")
    if args.max_age < 0:
        raise UsageError("--max-age must be a non-negative number of seconds")
    try:
        from ..observability.exporter import serve_until_stopped
    except ImportError as e:
        raise UsageError(f"sbredis metrics needs the prometheus extra (pip install 'sbredis[prometheus]'): {e}") from e
    try:
        serve_until_stopped(
            url,
            args.port,
            entities=args.entity,
            host=args.host,
            max_age=args.max_age,
            on_start=lambda server: out.say(f"serving http://{args.host}:{server.port}/metrics (Ctrl-C stops)"),
        )
    except OSError as e:
        out.warn(f"sbredis: cannot listen on {args.host}:{args.port}: {e.strerror}")
        return ExitCode.ERROR
    return ExitCode.OK
