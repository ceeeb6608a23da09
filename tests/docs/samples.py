"""The code samples of the documentation (docs/**/*.md and README.md), for the tests that run them.

A sample is a fenced block. ```python blocks run; ```bash / ```sh blocks run only when tagged
``shell`` (others are shown, not run: docker commands, installs, long-running workers). Every other
fence (```text, ```yaml, ```lua, ...) is text.

Samples read the Redis URL the way a user's program would, from ``SBREDIS_URL`` with a local
default::

    url = os.environ.get("SBREDIS_URL", "redis://127.0.0.1:6379/0")

and the tests set ``SBREDIS_URL`` to a server they started. An HTML comment on the line before a
fence tags it (invisible on the site)::

    <!-- sample: cluster -->      runs against the suite's 3-primary Redis Cluster
    <!-- sample: spark -->        runs with a Spark session bound to the name ``spark`` (tests/spark)
    <!-- sample: shell -->        a bash block that runs (bash -e, SBREDIS_URL set)
    <!-- sample: continues -->    runs after the previous python block of the page, in its namespace
    <!-- sample: pytest -->       a test module: saved as a file and run with ``python -m pytest`` (must pass)

A ```text block tagged ``<!-- sample: output -->`` right after a python block is that block's exact
standard output (compared by the test).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RUNNABLE = {"python", "py"}
SHELL = {"bash", "sh", "shell", "console"}
TAGS = {"cluster", "spark", "shell", "continues", "output", "pytest"}

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)\s*$")
_TAG = re.compile(r"^\s*<!--\s*sample:\s*(?P<tags>[\w\s-]+?)\s*-->\s*$")


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the first code line
    lang: str
    code: str
    tags: set[str] = field(default_factory=set)
    output: str | None = None  # the expected stdout (a following ```text block tagged output)
    previous: Block | None = None  # the block a `continues` block runs after

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUNNABLE or (self.lang in SHELL and "shell" in self.tags)


def doc_files() -> list[Path]:
    """Every Markdown file of the site, and the README."""
    return [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]


def parse(path: Path) -> list[Block]:
    """The fenced blocks of one Markdown file, with their tags; `output` blocks attached to their sample."""
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = len(m["indent"]), m["fence"], m["lang"].lower()
        start = i + 1
        j = start
        while j < len(lines) and lines[j].strip() != fence:
            j += 1
        if j == len(lines):
            raise ValueError(f"{path}:{i + 1}: unclosed code fence")
        tags: set[str] = set()
        before = i - 1
        while before >= 0 and lines[before].strip() == "":
            before -= 1
        tag = _TAG.match(lines[before]) if before >= 0 else None
        if tag:
            tags = set(tag["tags"].split())
            unknown = tags - TAGS
            if unknown:
                raise ValueError(f"{path}:{i + 1}: unknown sample tags {sorted(unknown)}")
        code = "\n".join(line[indent:] for line in lines[start:j]) + "\n"
        block = Block(path, start + 1, lang, code, tags)
        if "output" in tags:
            runnable = [b for b in blocks if b.runs]
            if not runnable or runnable[-1].output is not None:
                raise ValueError(f"{path}:{i + 1}: an output block must follow a sample that runs")
            runnable[-1].output = code
        else:
            if "continues" in tags:
                previous = [b for b in blocks if b.runs]
                if not previous:
                    raise ValueError(f"{path}:{i + 1}: 'continues' needs a sample before it")
                block.previous = previous[-1]
            blocks.append(block)
        i = j + 1
    return blocks


def all_blocks() -> list[Block]:
    return [b for path in doc_files() for b in parse(path)]


def runnable(*, with_tag: str | None = None, without: tuple[str, ...] = ()) -> list[Block]:
    """The samples that run, filtered by tag (`continues` blocks run with the block they continue)."""
    out = []
    for b in all_blocks():
        if not b.runs or "continues" in b.tags:
            continue
        if with_tag is not None and with_tag not in b.tags:
            continue
        if any(t in b.tags for t in without):
            continue
        out.append(b)
    return out


def chain(block: Block) -> list[Block]:
    """`block` and the `continues` blocks that follow it on its page, in order."""
    blocks = parse(block.path)
    out = [block]
    for b in blocks:
        if b.previous is not None and b.previous.line == out[-1].line:
            out.append(b)
    return out


# ------------------------------------------------------------------------------------- running
def run_python(block: Block, namespace: dict[str, object]) -> str:
    """Execute a python sample in `namespace` (line numbers as in the Markdown file); its stdout."""
    import contextlib
    import io

    code = compile("\n" * (block.line - 1) + block.code, str(block.path), "exec")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, namespace)
    return out.getvalue()


def shell_path(env: dict[str, str], shim_dir: Path) -> str:
    """PATH for shell samples: this interpreter's scripts first, so `sbredis` is the package under
    test; where the console script is not installed (a bare checkout on PYTHONPATH), a shim that runs
    ``python -m sbredis`` (the same entry point) stands in for it."""
    import shutil
    import sys
    import sysconfig

    scripts = sysconfig.get_path("scripts")
    path = os.pathsep.join([scripts, env.get("PATH", "")])
    if shutil.which("sbredis", path=scripts) is None:
        shim = shim_dir / "sbredis"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sbredis "$@"\n')
        shim.chmod(0o755)
        path = os.pathsep.join([str(shim_dir), path])
    return path


def run_shell(block: Block, env: dict[str, str], timeout: float = 120) -> str:
    """Run a shell sample with bash (-e -o pipefail) in the repository root; its stdout (fails on a
    non-zero exit, showing what it printed)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sbredis-docs-") as tmp:
        env = {**env, "PATH": shell_path(env, Path(tmp))}
        proc = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if proc.returncode != 0:
        raise AssertionError(f"{block.id} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def run_pytest(block: Block, env: dict[str, str], timeout: float = 120) -> str:
    """Save a test-module sample as a file and run pytest on it in a subprocess; it must pass."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sbredis-docs-") as tmp:
        module = Path(tmp, "test_sample.py")
        module.write_text(block.code)
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", tmp, str(module)],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if proc.returncode != 0:
        raise AssertionError(f"{block.id}: pytest exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    if " passed" not in proc.stdout or any(w in proc.stdout for w in (" skipped", " xfailed", " failed")):
        raise AssertionError(f"{block.id}: every test must run and pass\n{proc.stdout}")
    return ""


def run_chain(block: Block, namespace: dict[str, object], env: dict[str, str]) -> str:
    """Run `block` and its `continues` blocks, checking each one's expected output; all they printed."""
    printed = []
    for b in chain(block):
        if "pytest" in b.tags:
            out = run_pytest(b, env)
        elif b.lang in SHELL:
            out = run_shell(b, env)
        else:
            out = run_python(b, namespace)
        if b.output is not None:
            assert out == b.output, f"{b.id}: the output differs from the page\n--- page\n{b.output}--- ran\n{out}"
        printed.append(out)
    return "".join(printed)
