"""Subscription rules: the filter and action models (azure-servicebus names) and their compiler.

A rule's filter or action is compiled once, here, into a small prefix-notation program (JSON) that
``lua/includes/rules.lua`` evaluates inside Redis for each message a topic fans out. Compiling is
pure Python and touches no server; a rule that does not compile is refused when it is created
(:class:`RuleSyntaxError`, with the 0-based character position), as Service Bus refuses it.

Program format (version 1)::

    filter program  [1, <node>]                  <node> is a condition
    action program  [1, <stmt>, <stmt>, ...]     <stmt> ["set", <target>, <node>] | ["rm", <target>]

    <node>  "text"                 string constant (a bare JSON string)
            true | false           boolean constant (a bare JSON boolean)
            ["i", n]  ["f", x]     integer (Int64) and floating (Double) constants
            ["null"]               NULL
            ["d", ms]  ["t", us]   DateTime (Unix ms, UTC) and TimeSpan (microseconds) constants
            ["u", "uuid"]  ["x", "base64"]   Guid and byte-array constants (from parameters)
            ["p", name (, lower)]  user (application) property; `lower` when it differs from name
            ["s", key]             system property read from the message header (codec.FIELDS keys)
            ["b", key]             system property the broker supplies (sn et xt sz dc)
            ["pp", <node>]         property(name) / p(name): the property named by a string
            ["and", n1, n2, ...]  ["or", n1, n2, ...]  ["not", n]
            ["=", a, b]  ["<>", a, b]  ["<", a, b]  ["<=", a, b]  [">", a, b]  [">=", a, b]
            ["+", a, b]  ["-", a, b]  ["*", a, b]  ["/", a, b]  ["%", a, b]  ["neg", a]  ["pos", a]
            ["in", a, item1, item2, ...]         a IN (...); NOT IN is ["not", ["in", ...]]
            ["like", a, pattern (, escape)]      NOT LIKE is ["not", ["like", ...]]
            ["isnull", <property>]   ["exists", <property>]
            ["ceq", <property>, <constant>]      correlation-filter equality (never unknown, never fails)

Parameters (``@name``) are substituted as constants at compile time. Semantics (three-valued
logic, types, errors) are documented in ``docs/rules.md`` and implemented by the Lua evaluator.
"""

from __future__ import annotations

import base64
import json
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..exceptions import InvalidArgumentError
from . import codec

PROGRAM_VERSION = 1


class RuleCompileError(InvalidArgumentError):
    """A rule's filter or action cannot be compiled (nothing was stored)."""


class RuleSyntaxError(RuleCompileError):
    """A SQL filter or action expression is malformed, or names an unknown system property,
    parameter or function. ``position`` is the 0-based character offset of the offending token in
    ``expression``."""

    def __init__(self, message: str, *, expression: str, position: int) -> None:
        near = expression[position : position + 20]
        where = f"at position {position}" + (f" near {near!r}" if near else " (end of expression)")
        super().__init__(f"{message} {where}.")
        self.expression = expression
        self.position = position


# ------------------------------------------------------------------------------------- models
@dataclass
class SqlRuleFilter:
    """A SQL-like condition over a message's system (``sys.``) and application properties.

    ``parameters`` maps ``@name`` (the ``@`` may be left out) to a value substituted where the
    expression says ``@name``: str, int, float, bool, datetime, timedelta (also UUID, bytes, None).
    """

    sql_expression: str | None = None
    parameters: dict[str, Any] | None = None


class TrueRuleFilter(SqlRuleFilter):
    """Matches every message (``1=1``)."""

    def __init__(self) -> None:
        super().__init__("1=1", None)


class FalseRuleFilter(SqlRuleFilter):
    """Matches no message (``1>1``)."""

    def __init__(self) -> None:
        super().__init__("1>1", None)


@dataclass(kw_only=True)
class CorrelationRuleFilter:
    """Equality on the properties that are set, all of them ANDed (string comparison is
    case-sensitive). ``label`` is the message's subject (the azure-servicebus 7.x keyword);
    ``properties`` match application properties."""

    correlation_id: str | None = None
    message_id: str | None = None
    to: str | None = None
    reply_to: str | None = None
    label: str | None = None
    session_id: str | None = None
    reply_to_session_id: str | None = None
    content_type: str | None = None
    properties: dict[str, Any] | None = field(default=None)

    @property
    def subject(self) -> str | None:
        """The name ``ServiceBusMessage`` uses for ``label``."""
        return self.label

    @subject.setter
    def subject(self, value: str | None) -> None:
        self.label = value


@dataclass
class SqlRuleAction:
    """``SET prop = expr`` and ``REMOVE prop`` statements (``;`` between them is optional), run on
    the copy of a message that a rule's filter selected into a subscription."""

    sql_expression: str | None = None
    parameters: dict[str, Any] | None = None


RuleFilter = SqlRuleFilter | CorrelationRuleFilter

# ------------------------------------------------------------------------ system properties
# lower-case SQL name -> (table, key): "s" the message header (codec.FIELDS short keys),
# "b" values the broker supplies at fan-out (sequence number, times, size, delivery count).
SYSTEM_PROPERTIES: dict[str, tuple[str, str]] = {
    "messageid": ("s", "id"),
    "correlationid": ("s", "ci"),
    "label": ("s", "sj"),
    "subject": ("s", "sj"),
    "to": ("s", "to"),
    "replyto": ("s", "rt"),
    "sessionid": ("s", "sid"),
    "replytosessionid": ("s", "rts"),
    "contenttype": ("s", "ct"),
    "partitionkey": ("s", "pk"),
    "timetolive": ("s", "ttl"),
    "scheduledenqueuetimeutc": ("s", "se"),
    "sequencenumber": ("b", "sn"),
    "enqueuedtimeutc": ("b", "et"),
    "expiresatutc": ("b", "xt"),
    "size": ("b", "sz"),
    "deliverycount": ("b", "dc"),
}
# What SET may change: the properties a sender sets (the header), not the broker's.
SETTABLE_SYSTEM_KEYS = frozenset(key for table, key in SYSTEM_PROPERTIES.values() if table == "s")

_CORRELATION_FIELDS = (
    ("correlation_id", "ci"),
    ("message_id", "id"),
    ("to", "to"),
    ("reply_to", "rt"),
    ("label", "sj"),
    ("session_id", "sid"),
    ("reply_to_session_id", "rts"),
    ("content_type", "ct"),
)
assert {key for _, key in _CORRELATION_FIELDS} <= set(codec.FIELDS.values())

# Service Bus's limits: an expression (filter or action) of at most 1024 characters, an action
# of at most 32 statements. Nesting (parentheses, NOT, unary signs, property()) is capped so that
# the parser's recursion and the program's JSON depth stay far from Python's and cjson's limits.
MAX_EXPRESSION_LENGTH = 1024
MAX_ACTION_STATEMENTS = 32
MAX_NESTING = 64
# Every publish to the topic walks each rule's program, and that walk is not counted in work units
# (docs/rules.md, Limits): a 1024-character expression compiles to at most about 8 KiB, so this
# bounds what parameters substituted at each use, or a correlation filter's properties, add.
MAX_PROGRAM_BYTES = 32 * 1024
_INT64_MAX = 2**63 - 1
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_KEYWORDS = frozenset({"AND", "OR", "NOT", "IN", "LIKE", "ESCAPE", "IS", "NULL", "TRUE", "FALSE", "EXISTS"})


def _ascii_lower(name: str) -> str:
    """Lower-case as Lua's string.lower does (ASCII letters only), so both sides agree."""
    return name.translate(_ASCII_LOWER)


# -------------------------------------------------------------------------------- tokenizer
@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "int" "float" "str" "id" "qid" "param" "op" "eof"
    text: str  # identifier/keyword/operator text, string or identifier value, number text
    pos: int


def _is_ident_char(c: str) -> bool:
    return c == "_" or c.isalpha() or c.isdecimal()


def _tokenize(src: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(src)

    def fail(msg: str, at: int) -> RuleSyntaxError:
        return RuleSyntaxError(msg, expression=src, position=at)

    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
        elif c.isdecimal() or (c == "." and i + 1 < n and src[i + 1].isdecimal()):
            start = i
            while i < n and src[i].isdecimal():
                i += 1
            is_float = False
            if i < n and src[i] == ".":
                is_float = True
                i += 1
                while i < n and src[i].isdecimal():
                    i += 1
            if i < n and src[i] in "eE":
                j = i + 1
                if j < n and src[j] in "+-":
                    j += 1
                if j < n and src[j].isdecimal():
                    is_float = True
                    i = j
                    while i < n and src[i].isdecimal():
                        i += 1
            if i < n and (_is_ident_char(src[i]) or src[i] == "."):
                raise fail("malformed number", start)
            toks.append(_Tok("float" if is_float else "int", src[start:i], start))
        elif c == "'":
            start, parts = i, []
            i += 1
            while True:
                j = src.find("'", i)
                if j < 0:
                    raise fail("unterminated string constant", start)
                parts.append(src[i:j])
                if j + 1 < n and src[j + 1] == "'":
                    parts.append("'")
                    i = j + 2
                else:
                    i = j + 1
                    break
            toks.append(_Tok("str", "".join(parts), start))
        elif c in '["':
            close = "]" if c == "[" else '"'
            start, parts = i, []
            i += 1
            while True:
                j = src.find(close, i)
                if j < 0:
                    raise fail("unterminated delimited identifier", start)
                parts.append(src[i:j])
                if j + 1 < n and src[j + 1] == close:
                    parts.append(close)
                    i = j + 2
                else:
                    i = j + 1
                    break
            name = "".join(parts)
            if not name:
                raise fail("empty identifier", start)
            toks.append(_Tok("qid", name, start))
        elif c.isalpha():
            start = i
            while i < n and _is_ident_char(src[i]):
                i += 1
            toks.append(_Tok("id", src[start:i], start))
        elif c == "@":
            start = i
            i += 1
            while i < n and _is_ident_char(src[i]):
                i += 1
            if i == start + 1:
                raise fail("parameter name expected after '@'", start)
            toks.append(_Tok("param", src[start:i], start))
        else:
            two = src[i : i + 2]
            if two in ("<>", "!=", "<=", ">="):
                toks.append(_Tok("op", "<>" if two == "!=" else two, i))
                i += 2
            elif c in "=<>+-*/%(),.;":
                toks.append(_Tok("op", c, i))
                i += 1
            else:
                raise fail(f"unexpected character {c!r}", i)
    toks.append(_Tok("eof", "", n))
    return toks


# ----------------------------------------------------------------------------------- parser
@dataclass(frozen=True, slots=True)
class _Node:
    code: Any
    pos: int
    kind: str  # "cond" (a condition), "value", "prop" (a property: also a value), "bool" (TRUE/FALSE: either)


_COMPARISONS = frozenset({"=", "<>", "<", "<=", ">", ">="})


class _Parser:
    def __init__(self, src: str, parameters: Mapping[str, Any] | None) -> None:
        if len(src) > MAX_EXPRESSION_LENGTH:
            raise RuleCompileError(f"the expression is longer than {MAX_EXPRESSION_LENGTH} characters")
        self.src = src
        self.toks = _tokenize(src)
        self.i = 0
        self.depth = 0
        self.params: dict[str, Any] = {}
        for key, value in (parameters or {}).items():
            if not isinstance(key, str) or not key.lstrip("@"):
                raise RuleCompileError(f"parameter names must be non-empty strings, not {key!r}")
            self.params[_ascii_lower(key.lstrip("@"))] = value

    # -- token helpers
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def fail(self, msg: str, at: int | None = None) -> RuleSyntaxError:
        return RuleSyntaxError(msg, expression=self.src, position=self.tok.pos if at is None else at)

    def advance(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def is_kw(self, word: str, offset: int = 0) -> bool:
        t = self.toks[min(self.i + offset, len(self.toks) - 1)]
        return t.kind == "id" and t.text.upper() == word

    def is_op(self, op: str) -> bool:
        return self.tok.kind == "op" and self.tok.text == op

    def expect_op(self, op: str) -> _Tok:
        if not self.is_op(op):
            raise self.fail(f"expected '{op}'")
        return self.advance()

    def nest(self, delta: int, at: int) -> None:
        self.depth += delta
        if self.depth > MAX_NESTING:
            raise self.fail(f"the expression is nested more than {MAX_NESTING} levels deep", at)

    def expect_end(self) -> None:
        if self.tok.kind != "eof":
            raise self.fail("unexpected token")

    # -- kinds
    def cond(self, node: _Node) -> Any:
        if node.kind not in ("cond", "bool"):
            raise self.fail("expected a condition (a comparison, IN, LIKE, IS NULL or EXISTS)", node.pos)
        return node.code

    def value(self, node: _Node) -> Any:
        if node.kind == "cond":
            raise self.fail("a condition cannot be used as a value", node.pos)
        return node.code

    # -- grammar, lowest precedence first
    def parse_or(self) -> _Node:
        first = self.parse_and()
        if not self.is_kw("OR"):
            return first
        codes = [self.cond(first)]
        while self.is_kw("OR"):
            self.advance()
            codes.append(self.cond(self.parse_and()))
        return _Node(["or", *codes], first.pos, "cond")

    def parse_and(self) -> _Node:
        first = self.parse_not()
        if not self.is_kw("AND"):
            return first
        codes = [self.cond(first)]
        while self.is_kw("AND"):
            self.advance()
            codes.append(self.cond(self.parse_not()))
        return _Node(["and", *codes], first.pos, "cond")

    def parse_not(self) -> _Node:
        if self.is_kw("NOT"):
            start = self.advance().pos
            self.nest(1, start)
            inner = self.parse_not()
            self.nest(-1, start)
            return _Node(["not", self.cond(inner)], start, "cond")
        return self.parse_predicate()

    def parse_predicate(self) -> _Node:
        left = self.parse_additive()
        t = self.tok
        if t.kind == "op" and t.text in _COMPARISONS:
            self.advance()
            right = self.parse_additive()
            return _Node([t.text, self.value(left), self.value(right)], left.pos, "cond")
        negate = False
        if self.is_kw("NOT") and (self.is_kw("IN", 1) or self.is_kw("LIKE", 1)):
            self.advance()
            negate = True
        if self.is_kw("IN"):
            self.advance()
            self.expect_op("(")
            items = [self.value(self.parse_additive())]
            while self.is_op(","):
                self.advance()
                items.append(self.value(self.parse_additive()))
            self.expect_op(")")
            code: Any = ["in", self.value(left), *items]
        elif self.is_kw("LIKE"):
            self.advance()
            pattern = self.parse_additive()
            code = ["like", self.value(left), self.value(pattern)]
            if self.is_kw("ESCAPE"):
                self.advance()
                esc = self.parse_additive()
                code.append(self.value(esc))
                if isinstance(esc.code, str):
                    if len(esc.code) != 1:
                        raise self.fail("the ESCAPE character must be a string of length 1", esc.pos)
                    if isinstance(pattern.code, str):
                        self.check_pattern(pattern.code, esc.code, pattern.pos)
        elif self.is_kw("IS"):
            self.advance()
            is_not = False
            if self.is_kw("NOT"):
                self.advance()
                is_not = True
            if not self.is_kw("NULL"):
                raise self.fail("expected NULL")
            self.advance()
            if left.kind != "prop":
                raise self.fail("IS [NOT] NULL applies to a property", left.pos)
            code = ["isnull", left.code]
            return _Node(["not", code] if is_not else code, left.pos, "cond")
        else:
            return left
        return _Node(["not", code] if negate else code, left.pos, "cond")

    def check_pattern(self, pattern: str, escape: str, at: int) -> None:
        i = 0
        while i < len(pattern):
            if pattern[i] == escape:
                if i + 1 == len(pattern):
                    raise self.fail("the LIKE pattern ends with its escape character", at)
                i += 1
            i += 1

    def parse_additive(self) -> _Node:
        left = self.parse_multiplicative()
        while self.tok.kind == "op" and self.tok.text in "+-":
            op = self.advance().text
            right = self.parse_multiplicative()
            left = _Node([op, self.value(left), self.value(right)], left.pos, "value")
        return left

    def parse_multiplicative(self) -> _Node:
        left = self.parse_unary()
        while self.tok.kind == "op" and self.tok.text in "*/%":
            op = self.advance().text
            right = self.parse_unary()
            left = _Node([op, self.value(left), self.value(right)], left.pos, "value")
        return left

    def parse_unary(self) -> _Node:
        if self.tok.kind == "op" and self.tok.text in "+-":
            t = self.advance()
            self.nest(1, t.pos)
            operand = self.parse_unary()
            self.nest(-1, t.pos)
            code = self.value(operand)
            if t.text == "-" and isinstance(code, list) and code[0] in ("i", "f"):
                return _Node([code[0], -code[1]], t.pos, "value")
            return _Node(["neg" if t.text == "-" else "pos", code], t.pos, "value")
        return self.parse_primary()

    def parse_primary(self) -> _Node:
        t = self.tok
        if t.kind == "int":
            self.advance()
            number = int(t.text)
            if number > _INT64_MAX:
                raise self.fail("integer constant out of the Int64 range", t.pos)
            return _Node(["i", number], t.pos, "value")
        if t.kind == "float":
            self.advance()
            x = float(t.text)
            if math.isinf(x):
                raise self.fail("numeric constant out of range", t.pos)
            return _Node(["f", x], t.pos, "value")
        if t.kind == "str":
            self.advance()
            return _Node(t.text, t.pos, "value")
        if t.kind == "param":
            self.advance()
            name = t.text[1:]
            key = _ascii_lower(name)
            if key not in self.params:
                raise self.fail(f"no value was given for parameter @{name}", t.pos)
            return _Node(constant(self.params[key], f"parameter @{name}"), t.pos, "value")
        if self.is_op("("):
            self.advance()
            self.nest(1, t.pos)
            inner = self.parse_or()
            self.nest(-1, t.pos)
            self.expect_op(")")
            return _Node(inner.code, t.pos, inner.kind)
        if t.kind == "qid":
            return self.parse_property()
        if t.kind == "id":
            word = t.text.upper()
            if word in ("TRUE", "FALSE"):
                self.advance()
                return _Node(word == "TRUE", t.pos, "bool")
            if word == "NULL":
                self.advance()
                return _Node(["null"], t.pos, "value")
            if word == "EXISTS":
                self.advance()
                self.expect_op("(")
                nxt = self.toks[self.i + 1]
                if self.tok.kind == "id" and nxt.kind == "op" and nxt.text == "(":
                    prop = self.parse_function()
                else:
                    prop = self.parse_property()
                self.expect_op(")")
                return _Node(["exists", prop.code], t.pos, "cond")
            if word in _KEYWORDS:
                raise self.fail(f"unexpected keyword {word}")
            if self.toks[self.i + 1].kind == "op" and self.toks[self.i + 1].text == "(":
                return self.parse_function()
            return self.parse_property()
        if t.kind == "eof":
            raise self.fail("unexpected end of expression")
        raise self.fail("expected a value")

    def parse_function(self) -> _Node:
        t = self.advance()
        name = t.text.lower()
        self.expect_op("(")
        if name == "newid":
            raise self.fail("newid() is not supported (a rule is evaluated deterministically in Redis)", t.pos)
        if name not in ("property", "p"):
            raise self.fail(f"unknown function {t.text}()", t.pos)
        self.nest(1, t.pos)
        arg = self.parse_additive()
        self.nest(-1, t.pos)
        self.expect_op(")")
        if isinstance(arg.code, str):  # a constant name: resolve now
            return _Node(self.property_code(arg.code, arg.pos), t.pos, "prop")
        return _Node(["pp", self.value(arg)], t.pos, "prop")

    def parse_property(self) -> _Node:
        t = self.advance()
        if t.kind not in ("id", "qid") or (t.kind == "id" and t.text.upper() in _KEYWORDS):
            raise self.fail("expected a property name", t.pos)
        if t.kind == "id" and self.is_op("."):
            scope = t.text.lower()
            if scope not in ("sys", "user"):
                raise self.fail(f"unknown scope {t.text!r} (expected sys or user)", t.pos)
            self.advance()
            name_tok = self.advance()
            if name_tok.kind not in ("id", "qid"):
                raise self.fail("expected a property name", name_tok.pos)
            if scope == "sys":
                return _Node(self.system_code(name_tok.text, name_tok.pos), t.pos, "prop")
            return _Node(user_property(name_tok.text), t.pos, "prop")
        return _Node(user_property(t.text), t.pos, "prop")

    def system_code(self, name: str, at: int) -> list[str]:
        found = SYSTEM_PROPERTIES.get(_ascii_lower(name))
        if found is None:
            raise self.fail(f"the system property {name!r} does not exist or is not allowed", at)
        return [found[0], found[1]]

    def property_code(self, text: str, at: int) -> list[str]:
        """A property named by a string (property('sys.Label'), property('color'))."""
        low = _ascii_lower(text)
        if low.startswith("sys."):
            return self.system_code(text[4:], at)
        if low.startswith("user."):
            text = text[5:]
        if not text:
            raise self.fail("empty property name", at)
        return user_property(text)


def user_property(name: str) -> list[str]:
    low = _ascii_lower(name)
    return ["p", name] if low == name else ["p", name, low]


def constant(value: Any, what: str) -> Any:
    """A Python value (parameter or correlation value) as a program constant."""
    if value is None:
        return ["null"]
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value <= _INT64_MAX:
            raise RuleCompileError(f"{what} is out of the Int64 range")
        return ["i", value]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise RuleCompileError(f"{what} must be a finite number")
        return ["f", value]
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return ["d", codec.to_ms(value)]
    if isinstance(value, timedelta):
        return ["t", value // timedelta(microseconds=1)]
    if isinstance(value, uuid.UUID):
        return ["u", str(value)]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ["x", base64.b64encode(bytes(value)).decode()]
    raise RuleCompileError(
        f"{what} has an unsupported type {type(value).__name__} "
        "(str, int, float, bool, datetime, timedelta, UUID, bytes or None)"
    )


# ------------------------------------------------------------------------------- public API
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def compile_sql_filter(sql_expression: str, parameters: Mapping[str, Any] | None = None) -> Any:
    """The condition node of a SQL filter expression (not yet wrapped in a program).

    Raises:
        RuleSyntaxError: the expression is malformed (``position`` says where).
        RuleCompileError: a parameter has an unsupported type.
    """
    if not isinstance(sql_expression, str):
        raise RuleCompileError("sql_expression must be a string")
    p = _Parser(sql_expression, parameters)
    node = p.parse_or()
    p.expect_end()
    return p.cond(node)


def compile_filter(rule_filter: RuleFilter | None) -> str:
    """A filter's program as JSON: ``[1, <condition>]`` (``None`` is the TrueRuleFilter).

    Raises:
        RuleSyntaxError: a SQL expression is malformed (``position`` says where).
        RuleCompileError: an empty correlation filter, a value of an unsupported type, or a
            program over MAX_PROGRAM_BYTES.
    """
    if rule_filter is None or type(rule_filter) is TrueRuleFilter:
        node: Any = True
    elif type(rule_filter) is FalseRuleFilter:
        node = False
    elif isinstance(rule_filter, SqlRuleFilter):
        if not rule_filter.sql_expression:
            raise RuleCompileError("a SqlRuleFilter needs a sql_expression")
        node = compile_sql_filter(rule_filter.sql_expression, rule_filter.parameters)
    elif isinstance(rule_filter, CorrelationRuleFilter):
        node = _correlation(rule_filter)
    else:
        raise RuleCompileError(f"not a rule filter: {type(rule_filter).__name__}")
    return _program("filter", [PROGRAM_VERSION, node])


def _program(what: str, program: list[Any]) -> str:
    text = _dumps(program)
    if len(text.encode()) > MAX_PROGRAM_BYTES:
        raise RuleCompileError(
            f"the {what} compiles to {len(text.encode())} bytes, over the limit of {MAX_PROGRAM_BYTES}"
            " (fewer or shorter parameters or correlation properties)"
        )
    return text


def _correlation(f: CorrelationRuleFilter) -> Any:
    terms: list[Any] = []
    for attr, key in _CORRELATION_FIELDS:
        value = getattr(f, attr)
        if value is not None:
            if not isinstance(value, str):
                raise RuleCompileError(f"CorrelationRuleFilter.{attr} must be a string")
            terms.append(["ceq", ["s", key], value])
    for name, value in (f.properties or {}).items():
        if not isinstance(name, str) or not name:
            raise RuleCompileError("CorrelationRuleFilter.properties needs non-empty string keys")
        if value is None:
            raise RuleCompileError(f"CorrelationRuleFilter.properties[{name!r}] is None")
        terms.append(["ceq", user_property(name), constant(value, f"CorrelationRuleFilter.properties[{name!r}]")])
    if not terms:
        raise RuleCompileError("a CorrelationRuleFilter needs at least one property to match")
    return terms[0] if len(terms) == 1 else ["and", *terms]


def compile_action(action: SqlRuleAction) -> str:
    """An action's program as JSON: ``[1, <stmt>, ...]``.

    Raises:
        RuleSyntaxError: the expression is malformed, removes a system property or sets one the
            broker owns (``position`` says where).
        RuleCompileError: no expression, a parameter of an unsupported type, or a program over
            MAX_PROGRAM_BYTES.
    """
    if not isinstance(action, SqlRuleAction):
        raise RuleCompileError(f"not a rule action: {type(action).__name__}")
    src = action.sql_expression
    if not isinstance(src, str) or not src.strip():
        raise RuleCompileError("a SqlRuleAction needs a sql_expression")
    p = _Parser(src, action.parameters)
    stmts: list[Any] = []
    while p.tok.kind != "eof":
        start = p.tok.pos
        if p.is_kw("SET"):
            p.advance()
            target = p.parse_property()
            _check_target(p, target, settable=True)
            p.expect_op("=")
            stmts.append(["set", target.code, p.value(p.parse_additive())])
        elif p.is_kw("REMOVE"):
            p.advance()
            target = p.parse_property()
            _check_target(p, target, settable=False)
            stmts.append(["rm", target.code])
        else:
            raise p.fail("expected SET or REMOVE")
        if len(stmts) > MAX_ACTION_STATEMENTS:
            raise p.fail(f"an action has at most {MAX_ACTION_STATEMENTS} statements", start)
        if p.is_op(";"):
            p.advance()
        elif p.tok.kind != "eof" and not (p.is_kw("SET") or p.is_kw("REMOVE")):
            raise p.fail("expected ';', SET, REMOVE or the end of the action")
    return _program("action", [PROGRAM_VERSION, *stmts])


def _check_target(p: _Parser, target: _Node, settable: bool) -> None:
    kind = target.code[0]
    if kind == "p":
        return
    if not settable:
        raise p.fail("REMOVE applies to user properties only", target.pos)
    if kind == "b" or target.code[1] not in SETTABLE_SYSTEM_KEYS:
        raise p.fail("this system property is set by the broker and cannot be changed", target.pos)


# ----------------------------------------------------------------------------- dict helpers
def filter_to_dict(rule_filter: RuleFilter | None) -> dict[str, Any]:
    """A JSON-safe dict of a filter (parameters and property values tagged as codec does)."""
    if rule_filter is None or type(rule_filter) is TrueRuleFilter:
        return {"type": "true"}
    if type(rule_filter) is FalseRuleFilter:
        return {"type": "false"}
    if isinstance(rule_filter, SqlRuleFilter):
        return {
            "type": "sql",
            "sql_expression": rule_filter.sql_expression,
            "parameters": _encode_values(rule_filter.parameters),
        }
    if isinstance(rule_filter, CorrelationRuleFilter):
        out: dict[str, Any] = {"type": "correlation"}
        for attr, _ in _CORRELATION_FIELDS:
            out[attr] = getattr(rule_filter, attr)
        out["properties"] = _encode_values(rule_filter.properties)
        return out
    raise RuleCompileError(f"not a rule filter: {type(rule_filter).__name__}")


def filter_from_dict(data: Mapping[str, Any]) -> RuleFilter:
    kind = data.get("type")
    if kind == "true":
        return TrueRuleFilter()
    if kind == "false":
        return FalseRuleFilter()
    if kind == "sql":
        return SqlRuleFilter(data.get("sql_expression"), _decode_values(data.get("parameters")))
    if kind == "correlation":
        fields = {attr: data.get(attr) for attr, _ in _CORRELATION_FIELDS}
        return CorrelationRuleFilter(**fields, properties=_decode_values(data.get("properties")))
    raise RuleCompileError(f"unknown rule filter type {kind!r}")


def action_to_dict(action: SqlRuleAction | None) -> dict[str, Any] | None:
    if action is None:
        return None
    return {"type": "sql", "sql_expression": action.sql_expression, "parameters": _encode_values(action.parameters)}


def action_from_dict(data: Mapping[str, Any] | None) -> SqlRuleAction | None:
    if data is None:
        return None
    if data.get("type") != "sql":
        raise RuleCompileError(f"unknown rule action type {data.get('type')!r}")
    return SqlRuleAction(data.get("sql_expression"), _decode_values(data.get("parameters")))


def _encode_values(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    try:
        return codec.encode_properties(dict(values))
    except TypeError as e:
        raise RuleCompileError(f"unsupported value type {e}") from None


def _decode_values(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if values is None else codec.decode_properties(dict(values))


__all__ = [
    "PROGRAM_VERSION",
    "SYSTEM_PROPERTIES",
    "CorrelationRuleFilter",
    "FalseRuleFilter",
    "RuleCompileError",
    "RuleFilter",
    "RuleSyntaxError",
    "SqlRuleAction",
    "SqlRuleFilter",
    "TrueRuleFilter",
    "action_from_dict",
    "action_to_dict",
    "compile_action",
    "compile_filter",
    "compile_sql_filter",
    "filter_from_dict",
    "filter_to_dict",
]
