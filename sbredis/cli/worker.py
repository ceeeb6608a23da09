"""`sbredis worker TARGET --entity NAME ...`: its own parser lives in sbredis/worker/_cli.py."""

from __future__ import annotations

from ._registry import Registry


def _main(argv: list[str]) -> int:
    from ..worker._cli import main

    return main(argv)


def register(cli: Registry) -> None:
    cli.passthrough("worker", "run a handler on a queue (sbredis worker --help)", _main)
