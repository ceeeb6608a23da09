"""Generate the sync shell (sbredis/_sync/) from the async one (sbredis/aio/), as httpcore does.

python scripts/unasync.py           # write the sync modules
python scripts/unasync.py --check   # exit 1 when they are out of date (run by the test suite)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    "_handler.py",
    "_transport.py",
    "_client.py",
    "_sender.py",
    "_receiver.py",
    "_admin.py",
    "_admin_topics.py",
    "_forwarder.py",
    "_topic_sender.py",
    "_transaction.py",
    "_paired.py",
    "_session.py",
    "_registry.py",
]
# Written twice by hand: concurrency itself (tasks and futures vs. threads) differs; their shared
# logic is in sbredis/_core (renewal.py, paired.py) and both expose the same interface.
HAND_WRITTEN = ["_coalesce.py", "_renewer.py", "_paired_tasks.py"]
SRC, DST = ROOT / "sbredis" / "aio", ROOT / "sbredis" / "_sync"

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
]
HEADER = "# Generated from sbredis/aio/{name} by scripts/unasync.py: edit the async source, not this.\n"


def convert(text: str) -> str:
    for pattern, repl in SUBS:
        text = re.sub(pattern, repl, text, flags=re.MULTILINE)
    return text


def main(check: bool) -> int:
    stale = []
    for name in SOURCES:
        out = HEADER.format(name=name) + convert((SRC / name).read_text())
        target = DST / name
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
