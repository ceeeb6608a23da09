"""The hand-made Lua mutants of scripts/mutation.py still name lines of the scripts: a script edit
that changes a mutant's line must update the mutant, or the mutation run would skip it unnoticed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "scripts" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_lua_mutant_names_one_line_of_its_script() -> None:
    mutation = load()
    assert mutation.LUA, "no Lua mutants"
    assert mutation.stale_lua(mutation.LUA) == []
    assert len({m.id for m in mutation.LUA}) == len(mutation.LUA)  # ids are unique
    assert all(m.old != m.new for m in mutation.LUA)
