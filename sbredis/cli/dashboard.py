"""`sbredis dashboard [--host H] [--port P] [--read-only] [--token T]`: the web dashboard
(sbredis/dashboard/). Needs the ``dashboard`` extra; imported only when the command runs."""

from __future__ import annotations

import argparse
import os

from ._registry import ExitCode, Registry, UsageError, require_url
from .output import Output


def register(cli: Registry) -> None:
    p = cli.command(
        "dashboard",
        "serve a web dashboard: counts, rates, messages, dead-letter resubmit, purge",
        run,
        description="Serve the dashboard until Ctrl-C. It listens on 127.0.0.1 unless --host says otherwise; "
        "bound to any other address it requires --token (or $SBREDIS_DASHBOARD_TOKEN) or --basic-auth. "
        "Needs sbredis[dashboard].",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="TCP port (default 8080; 0: any free port)")
    p.add_argument("--read-only", action="store_true", help="show only: every action is refused (HTTP 403)")
    p.add_argument(
        "--token",
        default=os.environ.get("SBREDIS_DASHBOARD_TOKEN"),
        help="a bearer token the browser must present once (default $SBREDIS_DASHBOARD_TOKEN)",
    )
    p.add_argument(
        "--basic-auth",
        metavar="USER:PASSWORD",
        default=os.environ.get("SBREDIS_DASHBOARD_BASIC_AUTH"),
        help="require HTTP basic authentication (default $SBREDIS_DASHBOARD_BASIC_AUTH)",
    )


def run(args: argparse.Namespace, out: Output) -> int:
    url = require_url(args)
    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be between 0 and 65535")
    try:
        from ..dashboard.server import serve
    except ImportError as e:
        raise UsageError(f"sbredis dashboard needs the dashboard extra (pip install 'sbredis[dashboard]'): {e}") from e
    from ..dashboard.app import Settings, SettingsError

    try:
        settings = Settings.make(
            url, host=args.host, read_only=args.read_only, token=args.token, basic_auth=args.basic_auth
        )
    except SettingsError as e:
        raise UsageError(str(e)) from None
    try:
        serve(settings, args.port, on_start=lambda port: out.say(f"serving http://{args.host}:{port}/ (Ctrl-C stops)"))
    except OSError as e:
        out.warn(f"sbredis: cannot listen on {args.host}:{args.port}: {e.strerror}")
        return ExitCode.ERROR
    except KeyboardInterrupt:  # uvicorn raises the signal again once it has shut down: Ctrl-C is the way out
        pass
    return ExitCode.OK
