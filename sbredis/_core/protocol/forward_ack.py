"""forward_ack.lua: settle outbox entries after a delivery attempt."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import scripts
from .base import Call
from .forward_out import outbox_keys

NAME = "forward_ack"
ARGV = ("n",)


def call(path: str, partition: int, outcomes: Sequence[tuple[int, str, str, str, bytes]]) -> Call:
    """outcomes: (outbox seq, 'ok' | 'dl', reason, description, blob to store or b'')."""
    args: list[Any] = [len(outcomes)]
    for o in outcomes:
        args += list(o)
    return Call(scripts.load(NAME), outbox_keys(path, partition), tuple(args), partition)
