"""The `sbredis` command line: one module per command group, listed in COMMANDS.

Adding a command (e.g. ``sbredis syphon``) is one new module plus one word in COMMANDS::

    # sbredis/cli/syphon.py
    import argparse

    from ._registry import ExitCode, Registry
    from .output import Output


    def register(cli: Registry) -> None:
        p = cli.command("syphon", "copy messages from one namespace to another", run)
        p.add_argument("source")  # --url, --json, --progress and -v come with cli.command


    def run(args: argparse.Namespace, out: Output) -> int:
        out.say(f"syphoning {args.source}")  # out.show(rows, columns) prints a table or JSON
        return ExitCode.OK

``cli.group(name, help)`` returns a Registry for subcommands (``sbredis entities list``);
``cli.passthrough(name, help, main)`` hands the rest of the command line to ``main(argv)`` (as
``sbredis worker``, which has its own parser). A sbredis error raised by ``run`` is printed as one
line and gives exit code 1 (3 for a missing entity); ``_registry.UsageError`` gives 2. Use
``_registry.add_yes`` and ``confirm`` for anything destructive, ``output.Progress`` for long loops.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from .. import __version__
from ..exceptions import MessagingEntityNotFoundError, ServiceBusError
from ._registry import ExitCode, Main, Parser, Registry, UsageError, add_url, resolve_url
from .output import Output, masked

COMMANDS = (
    "entities",
    "messages",
    "dlq",
    "sessions",
    "stats",
    "syphon",
    "demo",
    "worker",
    "metrics",
    "dashboard",
)

EPILOG = """\
exit codes:
  0  done
  1  the operation failed (the error is printed on one line), or you answered no
  2  usage: bad arguments, or a destructive command without --yes when stdin is not a terminal
  3  nothing found: no such entity, or no message to peek, receive, resubmit or purge

every command takes --url (before or after the command; default $SBREDIS_URL) and --json; passwords
in URLs are never printed. memory:// (needs sbredis[memory]) is in-process: its state lasts one command.
"""


def parser() -> tuple[argparse.ArgumentParser, dict[str, Main]]:
    """The whole command line, and the commands that parse their own arguments."""
    p = Parser(
        prog="sbredis",
        description="Azure Service Bus semantics on Redis: manage entities, send, receive, peek, "
        "resubmit dead letters, watch counts.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"sbredis {__version__}")
    add_url(p, "url_before")
    passthrough: dict[str, Main] = {}
    cli = Registry(p.add_subparsers(dest="command", metavar="COMMAND", required=True), passthrough)
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(cli)
    return p, passthrough


def _leading_url(argv: list[str]) -> int:
    """How many leading arguments are a --url option (0, 1 for --url=U, 2 for --url U)."""
    if argv[:1] and argv[0].startswith("--url="):
        return 1
    return 2 if argv[:1] == ["--url"] and len(argv) > 1 else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p, passthrough = parser()
    before = _leading_url(argv)  # `sbredis --url U worker ...`: the worker's own parser takes --url
    if before and len(argv) > before and argv[before] in passthrough:
        argv = [argv[before], *argv[before + 1 :], *argv[:before]]
    if argv[:1] and argv[0] in passthrough:
        return passthrough[argv[0]](argv[1:])
    args = p.parse_args(argv)
    resolve_url(args)
    logging.basicConfig(
        level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)],
        format="[%(asctime)s %(levelname)s %(name)s] %(message)s",
    )
    out = Output(args.json)
    try:
        return int(args.run(args, out))
    except UsageError as e:
        out.warn(f"sbredis: {e}")
        return ExitCode.USAGE
    except ServiceBusError as e:
        out.warn(f"sbredis: {type(e).__name__}: {e.message}")
        return ExitCode.EMPTY if isinstance(e, MessagingEntityNotFoundError) else ExitCode.ERROR
    except KeyboardInterrupt:
        out.warn("sbredis: interrupted")
        return 130
    except BrokenPipeError:  # `sbredis peek q | head`
        return ExitCode.OK


__all__ = ["ExitCode", "Registry", "main", "masked"]
