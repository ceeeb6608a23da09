"""Load the Lua scripts: one file per atomic operation, with `--@include name` lines resolved.

The scripts are package data in ``sbredis/lua`` (shared helpers in ``sbredis/lua/includes``), read
through importlib.resources, so a source checkout and an installed wheel load the same files.

A composed script keeps only the include functions it reaches (``_prune``): Redis runs a script's
whole body at every EVALSHA, so each top-level ``local function`` it carries is a closure built on
every call (the receive, complete and send scripts spent about a fifth of their server time doing so,
docs/benchmarks.md "Loops against raw round trips").
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable

_INCLUDE = re.compile(r"^--@include (\w+)\s*$", re.MULTILINE)
# a top-level function of an include: from its "local function" line at column 0 to the first
# "end" alone at column 0 (the includes indent everything inside a function)
_COMMENT = re.compile(r"--\[\[.*?\]\]|--[^\n]*", re.DOTALL)
_WORD = re.compile(r"\w+")
_FUNCTION = re.compile(r"^local function (\w+)\(.*?^end[ \t]*$\n?", re.MULTILINE | re.DOTALL)


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


def _code(text: str) -> str:
    """`text` without its comments (no script has "--" inside a string)."""
    return _COMMENT.sub("", text)


def _prune(source: str) -> str:
    """`source` without the top-level functions its main code does not reach: names the main code
    uses, then names the reached functions use, and so on (comments do not count)."""
    blocks = list(_FUNCTION.finditer(source))
    bodies = {m.group(1): _code(m.group(0)) for m in blocks}
    cuts = [0, *(i for m in blocks for i in (m.start(), m.end())), len(source)]
    main = _code("".join(source[cuts[i] : cuts[i + 1]] for i in range(0, len(cuts), 2)))
    words = set(_WORD.findall(main))
    todo = [n for n in bodies if n in words]
    reached = set(todo)
    while todo:
        for w in _WORD.findall(bodies[todo.pop()]):
            if w in bodies and w not in reached:
                reached.add(w)
                todo.append(w)
    for m in reversed(blocks):
        if m.group(1) not in reached:
            source = source[: m.start()] + source[m.end() :]
    return source


@cache
def load(name: str) -> Script:
    """The composed script `name` (``sbredis/lua/<name>.lua`` with its includes, pruned)."""
    base = lua_dir()
    source = _prune(_resolve((base / f"{name}.lua").read_text(), base, ()))
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
