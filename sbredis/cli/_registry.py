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
from typing import TYPE_CHECKING, Any

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


def _common() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(
        "--url",
        default=os.environ.get("SBREDIS_URL"),
        help="redis://, rediss://, redis+cluster://, unix:// or memory:// URL (default $SBREDIS_URL)",
    )
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


def require_url(args: argparse.Namespace) -> str:
    """Raises UsageError when neither --url nor $SBREDIS_URL is set."""
    if not args.url:
        raise UsageError("give --url (or set SBREDIS_URL)")
    return str(args.url)
