"""The sync shell (sbredis/_sync) is generated from the async one by scripts/unasync.py."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "unasync.py"


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sbredis_unasync_under_test", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generated_sync_modules_are_up_to_date() -> None:
    r = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"sbredis/_sync is stale; run python scripts/unasync.py\n{r.stdout}{r.stderr}"


def test_every_async_module_has_a_sync_twin() -> None:
    """The whole folder is converted: every module but the re-export packages and the one
    hand-written twin (sbredis/aio/_paired_tasks.py, until paired namespaces get their package)."""
    tool = _load_tool()
    aio = {p.relative_to(ROOT / "sbredis" / "aio").as_posix() for p in (ROOT / "sbredis" / "aio").rglob("*.py")}
    reexports = {"__init__.py"} | {n for n in aio if n.startswith("management/")}
    assert set(tool.sources()) == aio - reexports - set(tool.HAND_WRITTEN)
    assert set(tool.HAND_WRITTEN) == set()
    for name in [*tool.sources(), *tool.HAND_WRITTEN]:
        assert (ROOT / "sbredis" / "_sync" / name).is_file()
    sync = {p.relative_to(ROOT / "sbredis" / "_sync").as_posix() for p in (ROOT / "sbredis" / "_sync").rglob("*.py")}
    assert sync == {*tool.sources(), *tool.HAND_WRITTEN, "__init__.py"}, "a sync module without an async source"


MODULES = ["_transport", "_client", "_sender", "_receiver", "_admin"]


@pytest.mark.parametrize("name", MODULES)
def test_sync_modules_have_no_async_left(name: str) -> None:
    text = (ROOT / "sbredis" / "_sync" / f"{name}.py").read_text()
    assert text.startswith("# Generated from sbredis/aio/")
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"\basync\b|\bawait\b|redis\.asyncio|__aenter__|__aexit__|asyncio\.", code)


def test_paired_twin_is_generated() -> None:
    """sbredis/paired/_sync.py is converted from sbredis/paired/_aio.py (a PAIRS entry)."""
    tool = _load_tool()
    assert ("sbredis/paired/_aio.py", "sbredis/paired/_sync.py") in [(s, d) for s, d, _ in tool.PAIRS]
    text = (ROOT / "sbredis" / "paired" / "_sync.py").read_text()
    assert text.startswith("# Generated from sbredis/paired/_aio.py")
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"\basync\b|\bawait\b|Awaitable|\.aio\.|AsyncBackground|asyncio\.", code)


def test_a_pair_substitution_that_matches_nothing_fails() -> None:
    tool = _load_tool()
    with pytest.raises(SystemExit, match="matched nothing"):
        tool.convert("x = 1\n", None, [(r"\bAsyncBackground\b", "Background")])


def _import_cases() -> list[object]:
    out: list[object] = []
    for pkg in ("aio", "_sync"):
        for name in MODULES:
            out.append(pytest.param(f"sbredis.{pkg}.{name}", id=f"{pkg}.{name}"))
    for mod in (
        "sbredis",
        "sbredis.aio",
        "sbredis.management",
        "sbredis.aio.management",
        "sbredis.paired",
        "sbredis.paired._aio",
        "sbredis.paired._sync",
    ):
        out.append(pytest.param(mod, id=mod))
    return out


@pytest.mark.parametrize("module", _import_cases())
def test_module_imports_on_its_own(module: str) -> None:
    """Each module imports in a fresh interpreter, whatever was imported before (no import cycles)."""
    r = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]


def test_public_sync_api_is_the_generated_one() -> None:
    import sbredis
    import sbredis.aio

    assert sbredis.ServiceBusClient.__module__ == "sbredis._sync._client"
    assert sbredis.aio.ServiceBusClient.__module__ == "sbredis.aio._client"
    sync_methods = {n for n in dir(sbredis.ServiceBusReceiver) if not n.startswith("__")}
    async_methods = {n for n in dir(sbredis.aio.ServiceBusReceiver) if not n.startswith("__")}
    assert sync_methods == async_methods


def test_convert_rewrites_async_constructs() -> None:
    tool = _load_tool()
    src = (
        "import asyncio\n"
        "from redis.asyncio import Redis\n"
        "from redis.asyncio.retry import Retry\n"
        "async def f(self):\n"
        "    async with x as y:\n"
        "        async for z in y:\n"
        "            await asyncio.sleep(1)\n"
        "    await self.redis.aclose()\n"
        "    raise StopAsyncIteration\n"
    )
    out = tool.convert(src)
    assert out == (
        "from redis import Redis\n"
        "from redis.retry import Retry\n"
        "def f(self):\n"
        "    with x as y:\n"
        "        for z in y:\n"
        "            time.sleep(1)\n"
        "    self.redis.close()\n"
        "    raise StopIteration\n"
    )


def test_check_mode_detects_stale_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = _load_tool()
    src, dst = tmp_path / "aio", tmp_path / "_sync"
    src.mkdir()
    dst.mkdir()
    for name in tool.sources():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "sbredis" / "aio" / name, src / name)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    monkeypatch.setattr(tool, "SRC", src)
    monkeypatch.setattr(tool, "DST", dst)
    monkeypatch.setattr(tool, "PAIRS", [])  # sources outside sbredis/aio: test_paired_twin_is_generated

    assert tool.main(check=True) == 1  # nothing generated yet
    assert "out of date" in capsys.readouterr().out
    assert tool.main(check=False) == 0
    assert tool.main(check=True) == 0
    first = tool.sources()[0]
    (src / first).write_text((src / first).read_text() + "\n# changed\n")
    assert tool.main(check=True) == 1
    assert first in capsys.readouterr().out


def test_a_module_without_async_source_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = _load_tool()
    src, dst = tmp_path / "aio", tmp_path / "_sync"
    shutil.copytree(ROOT / "sbredis" / "aio", src)
    dst.mkdir()
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    monkeypatch.setattr(tool, "SRC", src)
    monkeypatch.setattr(tool, "DST", dst)
    monkeypatch.setattr(tool, "PAIRS", [])  # sbredis/paired is not under this copy
    for name in tool.HAND_WRITTEN:
        shutil.copy(ROOT / "sbredis" / "_sync" / name, dst / name)
    assert tool.main(check=False) == 0
    (dst / "_gone.py").write_text("x = 1\n")
    assert tool.main(check=True) == 1
    assert "_gone.py" in capsys.readouterr().out
    assert tool.main(check=False) == 0  # writing removes it
    assert not (dst / "_gone.py").exists()


def test_a_substitution_rule_no_module_needs_fails_the_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = _load_tool()
    monkeypatch.setattr(tool, "SUBS", [*tool.SUBS, (r"\bNoSuchAsyncName\b", "NoSuchName")])
    assert tool.main(check=True) == 1
    assert "NoSuchAsyncName" in capsys.readouterr().out


def test_concurrency_mapping_becomes_rules() -> None:
    tool = _load_tool()
    out = tool.convert("from .._concurrency import AsyncCoalescer, async_gather\nx = AsyncAutoLockRenewer()\n")
    assert out == "from .._concurrency import SyncCoalescer, sync_gather\nx = SyncAutoLockRenewer()\n"
