"""The README stays a short page for users, and the README and the documentation describe what holds
now, not how it came to be: no commit hashes and no development narration (that is git's and
CHANGELOG.md's job; figures live in bench/results/ and on the Benchmarks page)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.samples import DOCS, ROOT

README = ROOT / "README.md"
MAX_README_BYTES = 10 * 1024

DEMO_COMMAND = 'pip install ".[embedded]" && sbredis demo'
TEST_COMMAND = 'pip install -e ".[dev]" && ruff check . && ruff format --check . && mypy && python -m pytest'

# An abbreviated (7-12) or full (40) git hash: hex digits with at least one digit and one letter,
# not part of a longer word, path or number. 32-hex trace ids and UUIDs are not matched.
_HASH = re.compile(r"(?<![\w./:#-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])(?:[0-9a-f]{7,12}|[0-9a-f]{40})(?![\w-])")
_HISTORY = re.compile(
    r"\bthis stop\b|\bthe stop before\b|\bcore issue\b|\bthe issue's\b|\bissue \d+\b|\bbefore the seam\b",
    re.IGNORECASE,
)


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def test_readme_is_at_most_10_kb() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, f"README.md is {size} bytes; move details into docs/ (at most {MAX_README_BYTES})"


def test_readme_has_the_two_commands_and_ci_runs_the_same_test_command() -> None:
    readme = README.read_text()
    assert DEMO_COMMAND in readme
    assert TEST_COMMAND in readme
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert TEST_COMMAND in ci, ".ci/run must run the README's test command, unchanged"


def test_readme_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text()):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README.md links to a missing file: {target}"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_development_history(page: Path) -> None:
    for n, line in enumerate(page.read_text().splitlines(), 1):
        found = _HASH.search(line) or _HISTORY.search(line)
        assert found is None, f"{page.relative_to(ROOT)}:{n}: {found.group(0)!r} (history belongs in git)"


def test_the_patterns_catch_what_they_are_for() -> None:
    assert _HASH.search("measured at 14c29d4, same hour")
    assert _HASH.search("commit c3f48f1 -> 14c29d4")
    assert _HISTORY.search("This stop (c3f48f1 -> 14c29d4):")
    assert not _HASH.search("trace 0af7651916cd43dd8448eb211c80319c, id 7d3e8f2a-1b4c-4e5f-9a6b-1c2d3e4f5a6b")
    assert not _HASH.search("redis-server 6.2.14, 1000000 messages, 0123456, #fff000")
