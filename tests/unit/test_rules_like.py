"""LIKE as lua/includes/rules.lua evaluates it, run in Lua 5.1 (lupa; Redis embeds Lua 5.1), against
a Python reference: SQL LIKE as a regular expression (``%`` ``.*``, ``_`` ``.``, the ESCAPE character
making the next one literal) matched over the whole string. The Lua matcher never backtracks, so
these also check that its segment-by-segment matching finds every match the regex finds.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbredis._core import scripts

lupa_lua51 = pytest.importorskip("lupa.lua51")

ESCAPES = [None, "!", "%", "_", "a", "é"]
ALPHABET = "ab%_!é😀\n"


@cache
def _evaluator() -> Any:
    lua = lupa_lua51.LuaRuntime(encoding=None)
    lua.execute("cjson = {null = {}}")  # the only cjson name a filter evaluation reads
    source = (scripts.lua_dir() / "includes" / "rules.lua").read_text()
    api = lua.execute(source + "\nreturn {match = rules_match, limits = rules_limits}")
    like = lua.eval(
        """function(api, s, p, esc)
          api.limits(nil, 4194304)  -- a fresh script call's budget
          return api.match({1, {'like', {'p', 's'}, p, esc}}, {}, {s = s}, nil)
        end"""
    )
    return lambda s, p, esc: like(api, s, p, esc)


def _bytes(x: str | bytes) -> bytes:
    return x.encode() if isinstance(x, str) else x


def lua_like(s: str | bytes, p: str | bytes, esc: str | None = None) -> Any:
    """True / False, or ("error", message, reason)."""
    r = _evaluator()(_bytes(s), _bytes(p), None if esc is None else esc.encode())
    if isinstance(r, tuple):
        value, err, reason = r
        if value is None:
            return ("error", err.decode(), reason.decode())
        return value
    return r


def like_regex(p: str, esc: str | None) -> re.Pattern[str] | None:
    """The reference: None when the pattern ends with its escape character (an error)."""
    out, i = [], 0
    while i < len(p):
        c = p[i]
        if esc is not None and c == esc:
            if i + 1 == len(p):
                return None
            out.append(re.escape(p[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.S)


def check(s: str, p: str, esc: str | None) -> None:
    rx = like_regex(p, esc)
    got = lua_like(s, p, esc)
    if rx is None:
        assert got[:1] == ("error",) and "ends with its escape character" in got[1], (s, p, esc, got)
    else:
        assert got is (rx.fullmatch(s) is not None), (s, p, esc, got)


@given(s=st.text(ALPHABET, max_size=12), p=st.text(ALPHABET, max_size=8), esc=st.sampled_from(ESCAPES))
@settings(max_examples=3000, deadline=None)
def test_like_agrees_with_the_reference(s: str, p: str, esc: str | None) -> None:
    check(s, p, esc)


@st.composite
def pattern_and_instance(draw: st.DrawFn) -> tuple[str, str, str | None]:
    """A pattern and a subject made from it (each % some text, each _ one character), then maybe
    changed a little: mostly matches, and near misses."""
    esc = draw(st.sampled_from(ESCAPES))
    p = draw(st.text(ALPHABET, max_size=14))
    out, i = [], 0
    while i < len(p):
        c = p[i]
        if esc is not None and c == esc and i + 1 < len(p):
            out.append(p[i + 1])
            i += 2
            continue
        if c == "%":
            out.append(draw(st.text(ALPHABET, max_size=4)))
        elif c == "_":
            out.append(draw(st.sampled_from(ALPHABET)))
        else:
            out.append(c)
        i += 1
    s = "".join(out)
    if s and draw(st.booleans()):
        k = draw(st.integers(0, len(s) - 1))
        s = s[:k] + draw(st.text(ALPHABET, max_size=2)) + s[k + 1 :]
    return s, p, esc


@given(case=pattern_and_instance())
@settings(max_examples=3000, deadline=None)
def test_like_agrees_with_the_reference_on_near_matches(case: tuple[str, str, str | None]) -> None:
    check(*case)


@pytest.mark.parametrize(
    ("s", "p", "esc", "expected"),
    [
        ("", "", None, True),
        ("", "%", None, True),
        ("", "_", None, False),
        ("a", "a%a", None, False),
        ("aa", "a%a", None, True),
        ("aXbXc", "a%b%c", None, True),
        ("abcb", "%b", None, True),
        ("abcbc", "a%bc", None, True),
        ("abab", "%ab_", None, False),
        ("héllo", "h_llo", None, True),
        ("h😀llo", "h_llo", None, True),
        ("h😀llo", "h__llo", None, False),
        ("50%", "50!%", "!", True),
        ("500", "50!%", "!", False),
        ("a_b", "a!_b", "!", True),
        ("axb", "a!_b", "!", False),
        ("50%", "50%%", "%", True),
        ("a.b(c)[d]$^", "a.b(c)[d]$^", None, True),
        ("x%z", "%é%%", "é", True),
        ("xz", "%é%%", "é", False),
    ],
)
def test_like_cases(s: str, p: str, esc: str | None, expected: bool) -> None:
    assert lua_like(s, p, esc) is expected
    rx = like_regex(p, esc)
    assert rx is not None and (rx.fullmatch(s) is not None) is expected


@given(s=st.binary(max_size=20), p=st.binary(max_size=10))
@settings(max_examples=500, deadline=None)
def test_like_on_any_bytes_answers(s: bytes, p: bytes) -> None:
    """Bytes that are not UTF-8 (only a raw client can store them) get an answer, never a script
    error: a byte that is not part of a character is a character of its own."""
    assert lua_like(s, p) in (True, False)


def test_the_reported_freeze_is_linear() -> None:
    """The pattern that kept one publish running for 15-25 s (backtracking string.find)."""
    pattern = "%a%b%c%d%e%f%g%"
    assert lua_like("abcdef" * 60, pattern) is False
    assert lua_like("abcdef" * 60 + "g", pattern) is True
    assert lua_like("abcdef" * 10_000, pattern) is False


@pytest.mark.parametrize(
    ("s", "p"),
    [
        ("a" * 200_000, "%" + ("a" * 500 + "_") * 2 + "b%"),  # every position a candidate
        ("a" * 200_000, "_" * 70_000 + "%b"),  # _ steps
        ("a" * 2_000_000, "%" + "a" * 1000 + "b%"),  # a window string.find pays x needle length for
    ],
)
def test_too_much_work_is_an_error_with_its_reason(s: str, p: str) -> None:
    got = lua_like(s, p)
    assert got[0] == "error" and got[2] == "RuleEvaluationLimitExceeded", got
