"""Generate the sync shell (sbredis/_sync/) from the async one (sbredis/aio/), as httpcore does.

python scripts/unasync.py           # write the sync modules
python scripts/unasync.py --check   # exit 1 when they are out of date (run by the test suite)

Every module under sbredis/aio (recursively) becomes the module of the same path under
sbredis/_sync, except the re-export packages (EXCLUDED: their sync counterparts are
sbredis/__init__.py and sbredis/management.py). Concurrency primitives that truly differ live side
by side in sbredis/_concurrency.py; its UNASYNC mapping (async name -> sync name) is applied here
as substitution rules. A rule that no module needed fails the run: a stale rule hides a rename.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC, DST = ROOT / "sbredis" / "aio", ROOT / "sbredis" / "_sync"
CONCURRENCY = ROOT / "sbredis" / "_concurrency.py"
# Re-export packages of the public async API (not converted).
EXCLUDED = ("__init__.py", "management/")
# Modules under sbredis/aio written by hand in both shells (none: concurrency primitives that truly
# differ live side by side in sbredis/_concurrency.py and sbredis/paired/_background.py).
HAND_WRITTEN: tuple[str, ...] = ()
# Async sources outside sbredis/aio: (source, sync twin, substitutions applied after SUBS). Each of
# these substitutions must match, so a rename in the source cannot leave the twin half converted.
PAIRS: list[tuple[str, str, list[tuple[str, str]]]] = [
    (
        "sbredis/paired/_aio.py",
        "sbredis/paired/_sync.py",
        [
            (r"\.\.aio\.", ".._sync."),
            (r"\bAsyncBackground\b", "Background"),
            (r"\bAwaitable\[(list\[Any\]|EntityMeta)\]", r"\1"),
            (r"^from collections\.abc import Awaitable, ", "from collections.abc import "),
        ],
    ),
]
INIT = '"""The sync shell, generated from sbredis/aio by scripts/unasync.py."""\n'

SUBS = [
    (r"\bredis\.asyncio\.retry\b", "redis.retry"),
    (r"\bredis\.asyncio\b", "redis"),
    (r"\basync def\b", "def"),
    (r"\basync with\b", "with"),
    (r"\basync for\b", "for"),
    (r"\bawait ", ""),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\b__aiter__\b", "__iter__"),
    (r"\b__anext__\b", "__next__"),
    (r"\bStopAsyncIteration\b", "StopIteration"),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\b_concurrency\.AsyncItems\[(\w+)\]", r"list[\1]"),  # awaitable or async-iterable: a list
    (r"\baclose\(", "close("),
    (r"^import asyncio\n", ""),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"\bAsyncRetrying\b", "Retrying"),
    (r"\bFakeAsyncRedis\b", "FakeRedis"),
    (r"\bpaired\._aio\b", "paired._sync"),
]
HEADER = "# Generated from {source} by scripts/unasync.py: edit the async source, not this.\n"


def concurrency_rules(path: Path = CONCURRENCY) -> list[tuple[str, str]]:
    """The UNASYNC mapping of sbredis/_concurrency.py as substitution rules."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "UNASYNC" for t in node.targets):
            mapping = ast.literal_eval(node.value)
            return [(rf"\b{re.escape(a)}\b", s) for a, s in mapping.items()]
    raise SystemExit(f"{path} has no UNASYNC mapping")


def rules() -> list[tuple[str, str]]:
    return SUBS + concurrency_rules()


def convert(text: str, used: dict[str, int] | None = None, extra: Sequence[tuple[str, str]] = ()) -> str:
    for pattern, repl in rules():
        text, n = re.subn(pattern, repl, text, flags=re.MULTILINE)
        if used is not None:
            used[pattern] = used.get(pattern, 0) + n
    for pattern, repl in extra:
        text, n = re.subn(pattern, repl, text, flags=re.MULTILINE)
        if not n:
            raise SystemExit(f"unasync: {pattern!r} matched nothing")
    return text


def sources() -> list[str]:
    """Paths (relative to sbredis/aio, posix) of the modules to convert."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if name in EXCLUDED or name.startswith(tuple(e for e in EXCLUDED if e.endswith("/"))):
            continue
        if name in HAND_WRITTEN:
            continue
        out.append(name)
    return out


def main(check: bool) -> int:
    used: dict[str, int] = {}
    expected: dict[str, str] = {"__init__.py": INIT}
    for name in sources():
        source = f"sbredis/aio/{name}"
        expected[name] = HEADER.format(source=source) + convert((SRC / name).read_text(), used)
    paired = {}
    for src, dst, subs in PAIRS:
        paired[ROOT / dst] = HEADER.format(source=src) + convert((ROOT / src).read_text(), used, subs)
    unused = [p for p, _ in rules() if not used.get(p)]
    if unused:
        print("substitution rules no module needed (remove them):", ", ".join(unused))
        return 1
    keep = set(expected) | set(HAND_WRITTEN)
    extra = sorted(
        p.relative_to(DST).as_posix() for p in DST.rglob("*.py") if p.relative_to(DST).as_posix() not in keep
    )
    stale = []
    for name, out in expected.items():
        target = DST / name
        if check:
            if not target.exists() or target.read_text() != out:
                stale.append(str(target.relative_to(ROOT)))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(out)
    for target, out in paired.items():
        if check:
            if not target.exists() or target.read_text() != out:
                stale.append(str(target.relative_to(ROOT)))
        else:
            target.write_text(out)
    if check:
        stale += [f"{(DST / e).relative_to(ROOT)} (no async source)" for e in extra]
    else:
        for e in extra:
            (DST / e).unlink()
    if stale:
        print("out of date (run python scripts/unasync.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv))
