"""The rule compiler (sbredis/_core/rules.py): programs for valid expressions, errors with positions.

What the programs do is tested in Redis (tests/integration/test_rules_eval.py); here: the parser's
output shape, precedence, names, parameters, and that every malformed expression is refused at
compile time with the position of the offending token. Also static checks of sbredis/lua/includes/rules.lua.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sbredis._core import codec, scripts
from sbredis._core.rules import (
    SYSTEM_PROPERTIES,
    CorrelationRuleFilter,
    FalseRuleFilter,
    RuleCompileError,
    RuleSyntaxError,
    SqlRuleAction,
    SqlRuleFilter,
    TrueRuleFilter,
    action_from_dict,
    action_to_dict,
    compile_action,
    compile_filter,
    filter_from_dict,
    filter_to_dict,
)
from sbredis.exceptions import InvalidArgumentError

RULES_LUA = Path(__file__).resolve().parents[2] / "sbredis" / "lua" / "includes" / "rules.lua"


def node(expr: str, params: dict[str, Any] | None = None) -> Any:
    program = json.loads(compile_filter(SqlRuleFilter(expr, params)))
    assert program[0] == 1
    assert len(program) == 2
    return program[1]


P = ["p", "a"]
Q = ["p", "b"]
ONE = ["i", 1]

VALID: list[tuple[str, Any]] = [
    # comparisons, all six operators (!= is <>)
    ("a = 1", ["=", P, ONE]),
    ("a <> 1", ["<>", P, ONE]),
    ("a != 1", ["<>", P, ONE]),
    ("a < 1", ["<", P, ONE]),
    ("a <= 1", ["<=", P, ONE]),
    ("a > 1", [">", P, ONE]),
    ("a >= 1", [">=", P, ONE]),
    ("a=1", ["=", P, ONE]),
    ("  a   =\t1\n", ["=", P, ONE]),
    # constants
    ("a = 'x'", ["=", P, "x"]),
    ("a = 'it''s'", ["=", P, "it's"]),
    ("a = ''", ["=", P, ""]),
    ("a = 'héllo ☃'", ["=", P, "héllo ☃"]),
    ("a = 2.5", ["=", P, ["f", 2.5]]),
    ("a = 2.", ["=", P, ["f", 2.0]]),
    ("a = .5", ["=", P, ["f", 0.5]]),
    ("a = 101.5E5", ["=", P, ["f", 10150000.0]]),
    ("a = 0.5e-2", ["=", P, ["f", 0.005]]),
    ("a = 1E3", ["=", P, ["f", 1000.0]]),
    ("a = 9223372036854775807", ["=", P, ["i", 9223372036854775807]]),
    ("a = -5", ["=", P, ["i", -5]]),
    ("a = -2.5", ["=", P, ["f", -2.5]]),
    ("a = - - 5", ["=", P, ["i", 5]]),
    ("a = TRUE", ["=", P, True]),
    ("a = false", ["=", P, False]),
    ("a = NULL", ["=", P, ["null"]]),
    ("TRUE", True),
    ("FALSE", False),
    ("(TRUE)", True),
    ("NOT TRUE", ["not", True]),
    # logic: NOT binds tighter than AND, AND tighter than OR; chains are flattened
    ("a = 1 AND b = 1", ["and", ["=", P, ONE], ["=", Q, ONE]]),
    ("a = 1 and b = 1 AND a = 2", ["and", ["=", P, ONE], ["=", Q, ONE], ["=", P, ["i", 2]]]),
    ("a = 1 OR b = 1 AND a = 2", ["or", ["=", P, ONE], ["and", ["=", Q, ONE], ["=", P, ["i", 2]]]]),
    ("(a = 1 OR b = 1) AND a = 2", ["and", ["or", ["=", P, ONE], ["=", Q, ONE]], ["=", P, ["i", 2]]]),
    ("NOT a = 1 AND b = 1", ["and", ["not", ["=", P, ONE]], ["=", Q, ONE]]),
    ("NOT NOT a = 1", ["not", ["not", ["=", P, ONE]]]),
    ("NOT (a = 1 OR b = 1)", ["not", ["or", ["=", P, ONE], ["=", Q, ONE]]]),
    # arithmetic precedence and associativity
    ("a + 2 * 3 = 1", ["=", ["+", P, ["*", ["i", 2], ["i", 3]]], ONE]),
    ("(a + 2) * 3 = 1", ["=", ["*", ["+", P, ["i", 2]], ["i", 3]], ONE]),
    ("a - 2 - 3 = 1", ["=", ["-", ["-", P, ["i", 2]], ["i", 3]], ONE]),
    ("a / 2 % 3 = 1", ["=", ["%", ["/", P, ["i", 2]], ["i", 3]], ONE]),
    ("-a = 1", ["=", ["neg", P], ONE]),
    ("+a = 1", ["=", ["pos", P], ONE]),
    ("a * -b = 1", ["=", ["*", P, ["neg", Q]], ONE]),
    ("a + 1 > b - 1", [">", ["+", P, ONE], ["-", Q, ONE]]),
    ("'a' + 'b' = a", ["=", ["+", "a", "b"], P]),
    # IN, LIKE, IS NULL, EXISTS
    ("a IN (1, 'x', 2.5)", ["in", P, ONE, "x", ["f", 2.5]]),
    ("a IN(1)", ["in", P, ONE]),
    ("a NOT IN (1, b)", ["not", ["in", P, ONE, Q]]),
    ("a + 1 IN (b * 2)", ["in", ["+", P, ONE], ["*", Q, ["i", 2]]]),
    ("a LIKE 'x%'", ["like", P, "x%"]),
    ("a NOT LIKE 'x_'", ["not", ["like", P, "x_"]]),
    ("a LIKE 'x!%' ESCAPE '!'", ["like", P, "x!%", "!"]),
    ("a LIKE b ESCAPE c", ["like", P, Q, ["p", "c"]]),
    ("a IS NULL", ["isnull", P]),
    ("a is not null", ["not", ["isnull", P]]),
    ("(a) IS NULL", ["isnull", P]),
    ("EXISTS(a)", ["exists", P]),
    ("exists ( sys.CorrelationId )", ["exists", ["s", "ci"]]),
    ("NOT EXISTS(a) OR a = 1", ["or", ["not", ["exists", P]], ["=", P, ONE]]),
    # property names: case kept, lower form added when it differs; scopes; delimiters
    ("Color = 1", ["=", ["p", "Color", "color"], ONE]),
    ("user.a = 1", ["=", P, ONE]),
    ("USER.Color = 1", ["=", ["p", "Color", "color"], ONE]),
    ("[a b] = 1", ["=", ["p", "a b"], ONE]),
    ("[x]]y] = 1", ["=", ["p", "x]y"], ONE]),
    ('"Contoso & Northwind" = 1', ["=", ["p", "Contoso & Northwind", "contoso & northwind"], ONE]),
    ('"a""b" = 1', ["=", ["p", 'a"b'], ONE]),
    ("user.[HR-EmployeeID] = 1", ["=", ["p", "HR-EmployeeID", "hr-employeeid"], ONE]),
    ("größe = 1", ["=", ["p", "größe"], ONE]),
    ("a_1 = 1", ["=", ["p", "a_1"], ONE]),
    ("sys = 1", ["=", ["p", "sys"], ONE]),
    # system properties, case-insensitive, header and broker ones
    ("sys.MessageId = 'x'", ["=", ["s", "id"], "x"]),
    ("sys.correlationid = 'x'", ["=", ["s", "ci"], "x"]),
    ("SYS.LABEL = 'x'", ["=", ["s", "sj"], "x"]),
    ("sys.Subject = 'x'", ["=", ["s", "sj"], "x"]),
    ("sys.To = 'x'", ["=", ["s", "to"], "x"]),
    ("sys.ReplyTo = 'x'", ["=", ["s", "rt"], "x"]),
    ("sys.SessionId = 'x'", ["=", ["s", "sid"], "x"]),
    ("sys.ReplyToSessionId = 'x'", ["=", ["s", "rts"], "x"]),
    ("sys.ContentType = 'x'", ["=", ["s", "ct"], "x"]),
    ("sys.PartitionKey = 'x'", ["=", ["s", "pk"], "x"]),
    ("sys.[Label] = 'x'", ["=", ["s", "sj"], "x"]),
    ("sys.SequenceNumber > 1", [">", ["b", "sn"], ONE]),
    ("sys.EnqueuedTimeUtc > 1", [">", ["b", "et"], ONE]),
    ("sys.Size > 1", [">", ["b", "sz"], ONE]),
    # property() / p()
    ("property('color') = 1", ["=", ["p", "color"], ONE]),
    ("p('sys.Label') = 1", ["=", ["s", "sj"], ONE]),
    ("P('user.Color') = 1", ["=", ["p", "Color", "color"], ONE]),
    ("p(a) = 1", ["=", ["pp", P], ONE]),
    ("p('x' + a) IS NULL", ["isnull", ["pp", ["+", "x", P]]]),
    ("EXISTS(p(a))", ["exists", ["pp", P]]),
    # keywords are case-insensitive
    ("a In (1) oR b Like 'x' aNd NoT b iS nUlL", None),
]


@pytest.mark.parametrize(("expr", "expected"), VALID, ids=[v[0] for v in VALID])
def test_valid_expressions_compile_to_the_expected_program(expr: str, expected: Any) -> None:
    got = node(expr)
    if expected is not None:
        assert got == expected


def test_keyword_case_example_shape() -> None:
    assert node("a In (1) oR b Like 'x' aNd NoT b iS nUlL") == [
        "or",
        ["in", P, ONE],
        ["and", ["like", Q, "x"], ["not", ["isnull", Q]]],
    ]


# (expression, 0-based position of the error, words the message contains)
ERRORS: list[tuple[str, int, str]] = [
    ("   ", 3, "unexpected end"),
    ("a =", 3, "unexpected end"),
    ("a = ", 4, "unexpected end"),
    ("a = 1 AND", 9, "unexpected end"),
    ("a == 1", 3, "expected a value"),
    ("a = 1 b", 6, "unexpected token"),
    ("a = 1)", 5, "unexpected token"),
    ("(a = 1", 6, "expected ')'"),
    ("a = 'abc", 4, "unterminated string"),
    ("a = 'it''s", 4, "unterminated string"),
    ("[abc = 1", 0, "unterminated delimited identifier"),
    ('"abc = 1', 0, "unterminated delimited identifier"),
    ("[] = 1", 0, "empty identifier"),
    ("a = 12abc", 4, "malformed number"),
    ("a = 1.2.3", 4, "malformed number"),
    ("a = 99999999999999999999", 4, "Int64 range"),
    ("a = 1e999", 4, "out of range"),
    ("a = #", 4, "unexpected character"),
    ("a ! 1", 2, "unexpected character"),
    ("a = @", 4, "parameter name expected"),
    ("a = @missing", 4, "no value was given for parameter @missing"),
    ("a", 0, "expected a condition"),
    ("a + 1", 0, "expected a condition"),
    ("'x'", 0, "expected a condition"),
    ("a = 1 AND b", 10, "expected a condition"),
    ("NOT a", 4, "expected a condition"),
    ("(a = 1) + 1 = 2", 0, "condition cannot be used as a value"),
    ("a = (b = 1)", 4, "condition cannot be used as a value"),
    ("a = 1 = 1", 6, "unexpected token"),
    ("a IN ()", 6, "expected a value"),
    ("a IN 1", 5, "expected '('"),
    ("a IN (1, )", 9, "expected a value"),
    ("a IN (1 2)", 8, "expected ')'"),
    ("a NOT = 1", 2, "unexpected token"),
    ("a LIKE", 6, "unexpected end"),
    ("a LIKE 'x' ESCAPE 'ab'", 18, "ESCAPE character must be a string of length 1"),
    ("a LIKE 'x' ESCAPE ''", 18, "ESCAPE character must be a string of length 1"),
    ("a LIKE 'x!' ESCAPE '!'", 7, "ends with its escape character"),
    ("a IS 1", 5, "expected NULL"),
    ("a IS NOT", 8, "expected NULL"),
    ("1 IS NULL", 0, "applies to a property"),
    ("a + 1 IS NULL", 0, "applies to a property"),
    ("EXISTS a", 7, "expected '('"),
    ("EXISTS(1)", 7, "expected a property name"),
    ("EXISTS(a", 8, "expected ')'"),
    ("sys.Nope = 1", 4, "'Nope' does not exist"),
    ("sys.LockToken = 1", 4, "does not exist"),
    ("foo.bar = 1", 0, "unknown scope"),
    ("sys. = 1", 5, "expected a property name"),
    ("sys.'x' = 1", 4, "expected a property name"),
    ("user.1 = 1", 4, "unexpected token"),  # '.1' reads as a number
    ("AND = 1", 0, "unexpected keyword AND"),
    ("a = IN", 4, "unexpected keyword IN"),
    ("newid() = 'x'", 0, "newid() is not supported"),
    ("lower(a) = 'x'", 0, "unknown function"),
    ("p() = 1", 2, "expected a value"),
    ("p('sys.Nope') = 1", 2, "'Nope' does not exist"),
    ("p('') = 1", 2, "empty property name"),
    ("a = 1;", 5, "unexpected token"),
    ("SET a = 1", 4, "unexpected token"),  # an action is not a filter: SET is a property here
]


@pytest.mark.parametrize(("expr", "position", "words"), ERRORS, ids=[e[0] for e in ERRORS])
def test_syntax_errors_name_their_position(expr: str, position: int, words: str) -> None:
    with pytest.raises(RuleSyntaxError) as info:
        compile_filter(SqlRuleFilter(expr))
    err = info.value
    assert err.position == position, str(err)
    assert words in str(err)
    assert f"at position {position}" in str(err)
    assert err.expression == expr


def test_limits_length_nesting_and_statements() -> None:
    longest = "a = '" + "x" * 1018 + "'"
    assert len(longest) == 1024
    compile_filter(SqlRuleFilter(longest))
    with pytest.raises(RuleCompileError, match="longer than 1024 characters"):
        compile_filter(SqlRuleFilter(longest + " "))
    with pytest.raises(RuleCompileError, match="longer than 1024 characters"):
        compile_action(SqlRuleAction("SET " + longest))
    compile_filter(SqlRuleFilter("(" * 64 + "a = 1" + ")" * 64))
    for deep, at in [
        ("(" * 65 + "a = 1" + ")" * 65, 64),
        ("NOT " * 65 + "a = 1", 256),
        ("a = " + "-" * 65 + "1", 68),
        ("a = " + "p(" * 65 + "'x'" + ")" * 65, 4 + 2 * 64),
    ]:
        with pytest.raises(RuleSyntaxError, match="nested more than 64 levels") as info:
            compile_filter(SqlRuleFilter(deep))
        assert info.value.position == at
    chain = "a = " + "+".join(["1"] * 500)  # left-associative: a long chain is deep JSON, not recursion
    assert len(json.loads(compile_filter(SqlRuleFilter(chain)))[1][2]) == 3
    compile_action(SqlRuleAction(";".join(["SET a = 1"] * 32)))
    with pytest.raises(RuleSyntaxError, match="at most 32 statements") as stmt_info:
        compile_action(SqlRuleAction(";".join(["SET a = 1"] * 33)))
    assert stmt_info.value.position == 32 * len("SET a = 1;")


def test_syntax_error_is_an_invalid_argument_error() -> None:
    with pytest.raises(InvalidArgumentError):
        compile_filter(SqlRuleFilter("a ="))
    with pytest.raises(ValueError):
        compile_filter(SqlRuleFilter("a ="))
    assert issubclass(RuleSyntaxError, RuleCompileError)


# ------------------------------------------------------------------------------ parameters
def test_parameters_become_constants_of_their_type() -> None:
    when = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    guid = uuid.UUID("12345678-1234-5678-1234-567812345678")
    params: dict[str, Any] = {
        "@s": "x",
        "@i": 7,
        "@f": 2.5,
        "@b": True,
        "@d": when,
        "@t": timedelta(seconds=1, microseconds=5),
        "@u": guid,
        "@x": b"\x00\xff",
        "@n": None,
        "plain": 3,  # the '@' may be left out of the key
    }
    expr = "a IN (@s, @i, @f, @b, @d, @t, @u, @x, @n, @plain, @S)"
    assert node(expr, params) == [
        "in",
        P,
        "x",
        ["i", 7],
        ["f", 2.5],
        True,
        ["d", codec.to_ms(when)],
        ["t", 1_000_005],
        ["u", str(guid)],
        ["x", "AP8="],
        ["null"],
        ["i", 3],
        "x",  # parameter names are case-insensitive
    ]


@pytest.mark.parametrize(
    ("value", "words"),
    [(object(), "unsupported type object"), (float("nan"), "finite"), (2**63, "Int64"), ([1], "unsupported type")],
)
def test_parameters_of_unsupported_values_are_refused(value: Any, words: str) -> None:
    with pytest.raises(RuleCompileError, match=words):
        compile_filter(SqlRuleFilter("a = @v", {"@v": value}))


def test_parameter_keys_must_be_names() -> None:
    with pytest.raises(RuleCompileError, match="parameter names"):
        compile_filter(SqlRuleFilter("a = 1", {"@": 1}))


# ---------------------------------------------------------------------- filters and actions
def test_true_false_and_default_filters() -> None:
    assert compile_filter(TrueRuleFilter()) == "[1,true]"
    assert compile_filter(FalseRuleFilter()) == "[1,false]"
    assert compile_filter(None) == "[1,true]"
    assert TrueRuleFilter().sql_expression == "1=1"
    assert FalseRuleFilter().sql_expression == "1>1"
    assert compile_filter(SqlRuleFilter("1=1")) == '[1,["=",["i",1],["i",1]]]'


def test_sql_filter_needs_an_expression() -> None:
    for empty in (None, ""):
        with pytest.raises(RuleCompileError, match="needs a sql_expression"):
            compile_filter(SqlRuleFilter(empty))
    with pytest.raises(RuleCompileError, match="not a rule filter"):
        compile_filter("a = 1")  # type: ignore[arg-type]


def test_correlation_filter_is_an_and_of_equalities() -> None:
    f = CorrelationRuleFilter(
        correlation_id="c",
        message_id="m",
        to="t",
        reply_to="r",
        label="l",
        session_id="s",
        reply_to_session_id="rs",
        content_type="ct",
        properties={"Color": "red", "n": 2, "f": 1.5, "ok": True},
    )
    assert json.loads(compile_filter(f)) == [
        1,
        [
            "and",
            ["ceq", ["s", "ci"], "c"],
            ["ceq", ["s", "id"], "m"],
            ["ceq", ["s", "to"], "t"],
            ["ceq", ["s", "rt"], "r"],
            ["ceq", ["s", "sj"], "l"],
            ["ceq", ["s", "sid"], "s"],
            ["ceq", ["s", "rts"], "rs"],
            ["ceq", ["s", "ct"], "ct"],
            ["ceq", ["p", "Color", "color"], "red"],
            ["ceq", ["p", "n"], ["i", 2]],
            ["ceq", ["p", "f"], ["f", 1.5]],
            ["ceq", ["p", "ok"], True],
        ],
    ]
    assert json.loads(compile_filter(CorrelationRuleFilter(correlation_id="x"))) == [1, ["ceq", ["s", "ci"], "x"]]


def test_correlation_filter_subject_alias_and_errors() -> None:
    f = CorrelationRuleFilter(label="a")
    assert f.subject == "a"
    f.subject = "b"
    assert f.label == "b"
    with pytest.raises(RuleCompileError, match="at least one"):
        compile_filter(CorrelationRuleFilter())
    with pytest.raises(RuleCompileError, match="must be a string"):
        compile_filter(CorrelationRuleFilter(to=5))  # type: ignore[arg-type]
    with pytest.raises(RuleCompileError, match="is None"):
        compile_filter(CorrelationRuleFilter(properties={"a": None}))
    with pytest.raises(TypeError):
        CorrelationRuleFilter("positional")  # type: ignore[misc]


def action(expr: str, params: dict[str, Any] | None = None) -> Any:
    program = json.loads(compile_action(SqlRuleAction(expr, params)))
    assert program[0] == 1
    return program[1:]


ACTIONS: list[tuple[str, Any]] = [
    ("SET a = 1", [["set", P, ONE]]),
    ("set a = 1;", [["set", P, ONE]]),
    (
        "SET a = a / 2; REMOVE b;SET sys.CorrelationId = 'low';",
        [
            ["set", P, ["/", P, ["i", 2]]],
            ["rm", Q],
            ["set", ["s", "ci"], "low"],
        ],
    ),
    ("SET a = 1 SET b = 2", [["set", P, ONE], ["set", Q, ["i", 2]]]),
    ("REMOVE [my prop]", [["rm", ["p", "my prop"]]]),
    ("REMOVE user.Color", [["rm", ["p", "Color", "color"]]]),
    ("SET sys.Label = @l", [["set", ["s", "sj"], "x"]]),
    ("SET sys.TimeToLive = @t", [["set", ["s", "ttl"], ["t", 60_000_000]]]),
    ("SET a = NULL", [["set", P, ["null"]]]),
    ("SET a = p('b')", [["set", P, Q]]),
    ("SET set = 1", [["set", ["p", "set"], ONE]]),
]


@pytest.mark.parametrize(("expr", "expected"), ACTIONS, ids=[a[0] for a in ACTIONS])
def test_actions_compile_to_statements(expr: str, expected: Any) -> None:
    assert action(expr, {"@l": "x", "@t": timedelta(minutes=1)}) == expected


ACTION_ERRORS: list[tuple[str, int, str]] = [
    ("SET", 3, "expected a property name"),
    ("SET a", 5, "expected '='"),
    ("SET a =", 7, "unexpected end"),
    ("SET a = 1,", 9, "expected ';', SET, REMOVE"),
    ("SET a = 1 b = 2", 10, "expected ';', SET, REMOVE"),
    ("UPDATE a = 1", 0, "expected SET or REMOVE"),
    ("SET a = 1; DELETE a", 11, "expected SET or REMOVE"),
    ("SET a = b = 1", 10, "expected ';'"),
    ("SET a = (b = 1)", 8, "condition cannot be used as a value"),
    ("REMOVE sys.Label", 7, "REMOVE applies to user properties only"),
    ("SET sys.SequenceNumber = 1", 4, "set by the broker"),
    ("SET sys.EnqueuedTimeUtc = 1", 4, "set by the broker"),
    ("SET sys.Nope = 1", 8, "'Nope' does not exist"),
    ("SET a = @nope", 8, "no value was given for parameter @nope"),
    ("SET 'a' = 1", 4, "expected a property name"),
    (";", 0, "expected SET or REMOVE"),
]


@pytest.mark.parametrize(("expr", "position", "words"), ACTION_ERRORS, ids=[a[0] for a in ACTION_ERRORS])
def test_action_errors_name_their_position(expr: str, position: int, words: str) -> None:
    with pytest.raises(RuleSyntaxError) as info:
        compile_action(SqlRuleAction(expr))
    assert info.value.position == position, str(info.value)
    assert words in str(info.value)


def test_action_needs_an_expression() -> None:
    for empty in (None, "", "   "):
        with pytest.raises(RuleCompileError, match="needs a sql_expression"):
            compile_action(SqlRuleAction(empty))
    with pytest.raises(RuleCompileError, match="not a rule action"):
        compile_action(SqlRuleFilter("a = 1"))  # type: ignore[arg-type]


def test_settable_system_properties_are_the_header_ones() -> None:
    for name, (table, key) in SYSTEM_PROPERTIES.items():
        expr = f"SET sys.{name} = NULL"
        if table == "s":
            assert action(expr) == [["set", ["s", key], ["null"]]]
            assert key in codec.FIELDS.values() or key in ("ttl", "se")
        else:
            with pytest.raises(RuleSyntaxError, match="set by the broker"):
                compile_action(SqlRuleAction(expr))


# ------------------------------------------------------------------------------ dict forms
ROUND_TRIP: list[Any] = [
    TrueRuleFilter(),
    FalseRuleFilter(),
    SqlRuleFilter("a = @p AND b < @d", {"@p": "x", "@d": datetime(2024, 1, 1, tzinfo=UTC)}),
    SqlRuleFilter("a = 1"),
    CorrelationRuleFilter(correlation_id="c", label="l", properties={"n": 1, "t": timedelta(seconds=3)}),
    CorrelationRuleFilter(to="t"),
]


@pytest.mark.parametrize("rule_filter", ROUND_TRIP, ids=lambda f: type(f).__name__)
def test_filters_round_trip_through_json(rule_filter: Any) -> None:
    data = json.loads(json.dumps(filter_to_dict(rule_filter)))
    back = filter_from_dict(data)
    assert type(back) is type(rule_filter)
    assert back == rule_filter
    assert compile_filter(back) == compile_filter(rule_filter)


def test_actions_round_trip_through_json() -> None:
    a = SqlRuleAction("SET a = @g", {"@g": uuid.UUID(int=5)})
    back = action_from_dict(json.loads(json.dumps(action_to_dict(a))))
    assert back == a
    assert action_to_dict(None) is None
    assert action_from_dict(None) is None
    with pytest.raises(RuleCompileError):
        action_from_dict({"type": "nope"})
    with pytest.raises(RuleCompileError):
        filter_from_dict({"type": "nope"})
    with pytest.raises(RuleCompileError, match="unsupported value type"):
        filter_to_dict(SqlRuleFilter("a = @x", {"@x": object()}))


# -------------------------------------------------------------------------- the Lua side
def test_lua_system_property_table_matches_python() -> None:
    text = RULES_LUA.read_text()
    block = re.search(r"local R_SYS_NAMES = \{(.*?)\n\}", text, re.S)
    assert block
    lua = dict(re.findall(r"(\w+) = '(@?\w+)'", block.group(1)))
    python = {name: ("@" + key if table == "b" else key) for name, (table, key) in SYSTEM_PROPERTIES.items()}
    assert lua == python


def test_rules_lua_compiles_as_lua51_with_sandbox_globals_only(lua51: Any) -> None:
    from tests.unit import test_lua_contract as contract

    composed = scripts._resolve(
        "--@include partition\n--@include messages\n--@include rules\nreturn 1\n", scripts.lua_dir(), ()
    )
    reads, writes = contract.globals_of(contract.compile51(lua51, composed, "rules_composed"))
    assert writes == set()
    assert reads <= contract.SANDBOX_GLOBALS, reads - contract.SANDBOX_GLOBALS
    assert "redis.call" not in RULES_LUA.read_text()


@pytest.mark.parametrize(
    "make",
    [
        lambda: compile_filter(CorrelationRuleFilter(properties={f"k{i}": i for i in range(100_000)})),
        lambda: compile_filter(CorrelationRuleFilter(correlation_id="c" * 40_000)),
        lambda: compile_filter(SqlRuleFilter("user.a = @p", parameters={"@p": "x" * 40_000})),
        lambda: compile_action(
            SqlRuleAction("; ".join(f"SET a{i} = @p" for i in range(32)), parameters={"@p": "x" * 1100})
        ),
    ],
    ids=["correlation-properties", "correlation-id", "filter-parameter", "action-parameter-at-each-use"],
)
def test_a_program_over_its_size_limit_is_refused(make: Any) -> None:
    """Each publish walks every rule's program: a correlation filter of 100,000 properties held
    Redis 190-480 ms per publish to its topic."""
    with pytest.raises(RuleCompileError, match="over the limit of 32768"):
        make()


def test_expressions_at_the_length_limit_compile_within_the_program_limit() -> None:
    widest = " OR ".join(["a+b*c-d/e=f"] * 100)[:1024].rsplit(" OR", 1)[0]
    statements = "; ".join(["SET a = b + c + d + e + f"] * 32)[:1024].rsplit(";", 1)[0]
    assert len(compile_filter(SqlRuleFilter(widest))) < 32768 // 4
    assert len(compile_action(SqlRuleAction(statements))) < 32768 // 4
