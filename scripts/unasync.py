"""Generate the sync shell (sbredis/_sync/) from the async one (sbredis/aio/), as httpcore does.

python scripts/unasync.py           # write the sync modules
python scripts/unasync.py --check   # exit 1 when they are out of date (run by the test suite)
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    "_transport.py",
    "_client.py",
    "_sender.py",
    "_receiver.py",
    "_admin.py",
    "_admin_topics.py",
    "_forwarder.py",
    "_topic_sender.py",
    "_transaction.py",
    "_session.py",
]
# Written twice by hand: concurrency itself (tasks and futures vs. threads) differs; their shared
# logic is in sbredis/_core (renewal.py) and both expose the same interface.
HAND_WRITTEN = ["_coalesce.py", "_renewer.py"]
SRC, DST = ROOT / "sbredis" / "aio", ROOT / "sbredis" / "_sync"
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
    (r"\baclose\(", "close("),
    (r"^import asyncio\n", ""),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"\bAsyncRetrying\b", "Retrying"),
    (r"\bFakeAsyncRedis\b", "FakeRedis"),
    (r"\bpaired\._aio\b", "paired._sync"),
]
HEADER = "# Generated from {source} by scripts/unasync.py: edit the async source, not this.\n"


def convert(text: str, extra: Sequence[tuple[str, str]] = ()) -> str:
    for pattern, repl in SUBS:
        text = re.sub(pattern, repl, text, flags=re.MULTILINE)
    for pattern, repl in extra:
        text, n = re.subn(pattern, repl, text, flags=re.MULTILINE)
        if not n:
            raise SystemExit(f"unasync: {pattern!r} matched nothing")
    return text


def targets() -> list[tuple[Path, Path, list[tuple[str, str]]]]:
    """(async source, sync twin, extra substitutions) for every generated module."""
    return [(SRC / name, DST / name, []) for name in SOURCES] + [
        (ROOT / src, ROOT / dst, extra) for src, dst, extra in PAIRS
    ]


def main(check: bool) -> int:
    stale = []
    for source, target, extra in targets():
        out = HEADER.format(source=source.relative_to(ROOT)) + convert(source.read_text(), extra)
        if check:
            if not target.exists() or target.read_text() != out:
                stale.append(str(target.relative_to(ROOT)))
        else:
            target.write_text(out)
    if stale:
        print("out of date (run python scripts/unasync.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv))
