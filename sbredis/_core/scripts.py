"""Load the Lua scripts: one file per atomic operation, with `--@include name` lines resolved.

The scripts are package data in ``sbredis/lua`` (shared helpers in ``sbredis/lua/includes``), read
through importlib.resources, so a source checkout and an installed wheel load the same files.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable

_INCLUDE = re.compile(r"^--@include (\w+)\s*$", re.MULTILINE)


def lua_dir() -> Traversable:
    """The folder of the Lua scripts inside the installed ``sbredis`` package."""
    return files("sbredis").joinpath("lua")


@dataclass(frozen=True)
class Script:
    name: str
    source: str
    sha: str


def _resolve(text: str, base: Traversable, seen: tuple[str, ...], done: set[str] | None = None) -> str:
    """Inline includes, each once per script (a later line naming one already inlined is dropped:
    an include may bring what it needs, e.g. messages brings sessions)."""
    done = set() if done is None else done

    def inline(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in seen:
            raise ValueError(f"include cycle through {name}")
        if name in done:
            return ""
        done.add(name)
        body = (base / "includes" / f"{name}.lua").read_text()
        return _resolve(body, base, (*seen, name), done)

    return _INCLUDE.sub(inline, text)


@cache
def load(name: str) -> Script:
    """The composed script `name` (``sbredis/lua/<name>.lua`` with its includes)."""
    base = lua_dir()
    source = _resolve((base / f"{name}.lua").read_text(), base, ())
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())


SCRIPT_NAMES = (
    "send",
    "cancel_scheduled",
    "receive",
    "receive_deferred",
    "complete",
    "abandon",
    "defer",
    "dead_letter",
    "renew",
    "peek",
    "stats",
    "probe",
    "publish",
    "cancel_topic_scheduled",
    "forward_out",
    "forward_in",
    "forward_ack",
    "idle",
    "tx_commit",
    "syphon_lease",
    "session_lock",
    "session_receive",
    "session_renew",
    "session_release",
    "session_state",
    "session_list",
    "dashboard_counts",
)
