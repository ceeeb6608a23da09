"""Fixtures of the unit tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def lua51() -> Any:
    """A Lua 5.1 runtime, as Redis embeds (lupa is in the test extra: a missing lupa errors the tests
    that need it, never skips them)."""
    from lupa import lua51 as lupa_lua51

    return lupa_lua51.LuaRuntime(encoding=None)
