"""The subcommand registry, exit codes and the options every command shares.

A command module's ``register(cli)`` adds its commands with ``cli.command(...)`` (a leaf: its
parser gets ``--url``, ``--json``, ``--progress`` and ``-v``), ``cli.group(...)`` (a command with
subcommands, e.g. ``entities``) or ``cli.passthrough(...)`` (a command with its own parser, as
``worker``). A leaf's ``run(args, out)`` returns an exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from enum import IntEnum
from typing import TYPE_CHECKING, Any, NoReturn

from .._core import memory
from .._core.redact import redact_text

if TYPE_CHECKING:
    from .output import Output

Run = Callable[[argparse.Namespace, "Output"], int]
Main = Callable[[list[str]], int]


class ExitCode(IntEnum):
    """What `sbredis` returns (``sbredis --help`` lists them)."""

    OK = 0
    ERROR = 1  # an operation failed (a typed sbredis error, printed as one line), or the user said no
    USAGE = 2  # bad arguments; a destructive command without --yes when stdin is not a terminal
    EMPTY = 3  # nothing found: no such entity, or no message where the command needed one


class UsageError(Exception):
    """Arguments the command cannot use (exit code 2)."""


URL_HELP = (
    "redis://, rediss://, redis+cluster://, unix:// or memory:// URL (default $SBREDIS_URL); memory:// "
    "needs sbredis[memory] and its state lasts one command"
)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose every message (usage errors quote the offending argument, which can
    be a URL with a password) goes out with passwords masked; subparsers inherit the class."""

    def _print_message(self, message: str, file: Any = None) -> None:
        super()._print_message(redact_text(message), file)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        super().exit(status, None if message is None else redact_text(message))

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {redact_text(message)}\n")


def add_url(p: argparse.ArgumentParser, dest: str = "url") -> None:
    """--url; before the command (``sbredis --url U entities list``) it goes to ``url_before``, as a
    subparser's defaults would overwrite a value of the same name given before it."""
    p.add_argument(
        "--url", dest=dest, metavar="URL", default=None if dest == "url" else argparse.SUPPRESS, help=URL_HELP
    )


def resolve_url(args: argparse.Namespace) -> None:
    """args.url: --url after the command, else before it, else $SBREDIS_URL."""
    args.url = getattr(args, "url", None) or getattr(args, "url_before", None) or os.environ.get("SBREDIS_URL")


def _common() -> argparse.ArgumentParser:
    p = Parser(add_help=False)
    add_url(p)
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    p.add_argument("--progress", action="store_true", help="show progress bars even when stderr is not a terminal")
    p.add_argument("-v", "--verbose", action="count", default=0, help="log more (-v info, -vv debug)")
    return p


COMMON = _common()


class Registry:
    """Adds subcommands to one argparse level."""

    def __init__(self, sub: Any, passthrough: dict[str, Main]) -> None:
        self._sub = sub
        self._passthrough = passthrough

    def command(self, name: str, help: str, run: Run, **kwargs: Any) -> argparse.ArgumentParser:
        """A leaf command: `run(args, out)` is called with the parsed arguments."""
        p: argparse.ArgumentParser = self._sub.add_parser(
            name, help=help, description=kwargs.pop("description", help), parents=[COMMON], **kwargs
        )
        p.set_defaults(run=run)
        return p

    def group(self, name: str, help: str) -> Registry:
        """A command with subcommands (``sbredis <name> <subcommand>``)."""
        p = self._sub.add_parser(name, help=help, description=help)
        add_url(p, "url_before")  # `sbredis entities --url U list` as well
        return Registry(p.add_subparsers(dest=f"{name}_command", metavar="COMMAND", required=True), self._passthrough)

    def passthrough(self, name: str, help: str, main: Main) -> None:
        """A top-level command that parses its own arguments: ``main(argv after the name)``."""
        self._sub.add_parser(name, help=help, add_help=False)
        self._passthrough[name] = main


def add_yes(p: argparse.ArgumentParser) -> None:
    p.add_argument("-y", "--yes", action="store_true", help="do it without asking")


def confirm(args: argparse.Namespace, question: str) -> bool:
    """True when --yes was given or the user answers yes on the terminal.

    Raises:
        UsageError: stdin is not a terminal and --yes was not given.
    """
    if getattr(args, "yes", False):
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"{question.rstrip('?')}: refusing without --yes (stdin is not a terminal)")
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def add_sub_queue(p: argparse.ArgumentParser, verb: str) -> None:
    """--dlq / --transfer-dlq: the dead-letter or transfer dead-letter subqueue (``args.sub_queue``)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--dlq", dest="sub_queue", action="store_const", const="deadletter", help=f"{verb} the dead-letter subqueue"
    )
    g.add_argument(
        "--transfer-dlq",
        dest="sub_queue",
        action="store_const",
        const="transferdeadletter",
        help=f"{verb} the transfer dead-letter subqueue (messages that could not be forwarded)",
    )


def require_url(args: argparse.Namespace) -> str:
    """Raises UsageError when neither --url nor $SBREDIS_URL is set."""
    url = getattr(args, "url", None)
    if not url:
        raise UsageError("give --url (or set SBREDIS_URL)")
    if str(url).lower().startswith("memory://") and not memory.available():
        raise UsageError(MEMORY_HINT)
    return str(url)


MEMORY_HINT = "memory:// needs the memory extra: pip install 'sbredis[memory]'"
