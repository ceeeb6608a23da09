"""Rule programs evaluated by sbredis/lua/includes/rules.lua inside a real redis-server.

Each case compiles a filter or action with sbredis._core.rules, builds a real message's stored header
(ServiceBusMessage -> codec blob -> header JSON), and EVALs a small wrapper script composed from the
include. Filters answer true / false / error; actions answer the new header (compared after the
codec decodes it) or an error, and the wrapper checks that the caller's tables were left alone.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis

from sbredis import ServiceBusMessage
from sbredis._core import codec, scripts
from sbredis._core.rules import (
    CorrelationRuleFilter,
    FalseRuleFilter,
    SqlRuleAction,
    SqlRuleFilter,
    TrueRuleFilter,
    compile_action,
    compile_filter,
)

pytestmark = pytest.mark.integration

WRAPPER = """--@include rules
-- ARGV[1] match | match_decoded | match_many | action | blob   ARGV[2] program
-- ARGV[3] header JSON (blob: a whole stored message)
-- ARGV[4] broker JSON or '' (blob: the action program or '')
if ARGV[1] == 'blob' then
  -- what a fan-out script does (docs/rules.md): split the stored blob, filter, act, rebuild
  local blob = ARGV[3]
  local b1, b2, b3, b4 = string.byte(blob, 2, 5)
  local hlen = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
  local h = cjson.decode(string.sub(blob, 6, 5 + hlen))
  local a = h.ap
  h.ap = nil
  local matched, err = rules_match(ARGV[2], h, a, nil)
  if matched == nil then return {'error', err} end
  if not matched then return {'false'} end
  if ARGV[4] == '' then return {'true'} end
  local h2, a2, chg = rules_apply_action(ARGV[4], h, a, nil)
  if h2 == nil then return {'error', a2, chg} end
  local js = rules_header(string.sub(blob, 6, 5 + hlen), h2, a2, chg)
  if not js then return {'error', 'no header'} end
  local n = #js
  return {'ok', string.char(1, math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256,
                            math.floor(n / 256) % 256, n % 256) .. js .. string.sub(blob, 6 + hlen)}
end
local hdr = cjson.decode(ARGV[3])
local ap = hdr.ap
hdr.ap = nil
local before = rules_json({h = hdr, a = ap or {}})
local brk = nil
if ARGV[4] ~= '' then brk = cjson.decode(ARGV[4]) end
local mode = ARGV[1]
local out
if mode == 'match' or mode == 'match_decoded' then
  local program = ARGV[2]
  if mode == 'match_decoded' then program = cjson.decode(program) end
  local r, err = rules_match(program, hdr, ap, brk)
  if r == nil then out = {'error', err} else out = {tostring(r)} end
elseif mode == 'match_many' then
  local n = 0
  for i = 1, 50 do
    if rules_match(ARGV[2], hdr, ap, brk) then n = n + 1 end
  end
  out = {tostring(n)}
else
  local h, a = rules_apply_action(ARGV[2], hdr, ap, brk)
  if h == nil then
    out = {'error', a}
  else
    h.ap = a
    out = {'ok', rules_json(h)}
  end
end
if rules_json({h = hdr, a = ap or {}}) ~= before then return redis.error_reply('caller tables changed') end
return out
"""

WHEN = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
GUID = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")
PROPS: dict[str, Any] = {
    "color": "red",
    "Quantity": 10,
    "price": 2.5,
    "flag": True,
    "nul": None,
    "name": "O'Brien",
    "pct": "50%",
    "under": "a_b",
    "dots": "a.b(c)[d]$",
    "uni": "héllo",
    "when": WHEN,
    "span": timedelta(seconds=90),
    "guid": GUID,
    "raw": b"\x00\x01",
    "neg": -7,
    "big": 2**40,
    "keyname": "color",
    "badkey": "sys.Nope",
    "two": "ab",
    "pat_end": "a!",
}
SCHEDULED = datetime(2030, 6, 1, tzinfo=UTC)
SYSTEM: dict[str, Any] = {
    "message_id": "m-1",
    "correlation_id": "corr-9",
    "subject": "Important",
    "to": "store-5",
    "reply_to": "replies",
    "session_id": "s-1",
    "reply_to_session_id": "rs-1",
    "content_type": "application/json",
    "time_to_live": timedelta(minutes=5),
    "scheduled_enqueue_time_utc": SCHEDULED,
}
ENQUEUED = datetime(2024, 3, 4, tzinfo=UTC)
BROKER = {"sn": 42, "et": codec.to_ms(ENQUEUED), "sz": 1234, "dc": 0}
PARAMS: dict[str, Any] = {
    "@c": "red",
    "n": 5,
    "@f": 2.5,
    "@flag": True,
    "@nil": None,
    "@when": WHEN,
    "@later": WHEN + timedelta(days=1),
    "@earlier": WHEN - timedelta(hours=1),
    "@hour": timedelta(hours=1),
    "@ninety": timedelta(seconds=90),
    "@sixty": timedelta(seconds=60),
    "@five_min": timedelta(minutes=5),
    "@sched": SCHEDULED,
    "@enq": ENQUEUED,
    "@guid": GUID,
    "@raw": b"\x00\x01",
    "@pat": "r%",
    "@esc": "!",
}


def header(minimal: bool = False, props: Any = PROPS) -> str:
    if minimal:
        msg = ServiceBusMessage(b"x", message_id="only-id")
    else:
        msg = ServiceBusMessage(b"body", application_properties=props, **SYSTEM)
    return json.dumps(codec.header_of(msg.encoded()))


@pytest.fixture(scope="module")
def evaluate(redis_server: Any) -> Iterator[Any]:
    r = redis.Redis.from_url(redis_server.url)
    source = scripts._resolve(WRAPPER, scripts.lua_dir(), ())
    script = r.register_script(source)

    def run(mode: str, program: str, hdr: str | bytes, brk: Any = BROKER) -> list[Any]:
        extra = brk if isinstance(brk, str) else json.dumps(brk) if brk is not None else ""
        reply = script(args=[mode, program, hdr, extra])
        if mode == "blob":
            return reply  # type: ignore[no-any-return]
        return [x.decode() for x in reply]

    yield run
    r.close()


T, F = "true", "false"


def err(words: str) -> str:
    return "error:" + words


def check(reply: list[str], expected: str) -> None:
    """`reply` is ["true"] / ["false"] / ["error", message]; an expected error names words of it."""
    if expected.startswith("error:"):
        assert reply[0] == "error", reply
        assert expected[6:] in reply[1]
    else:
        assert reply == [expected]


# (filter expression, expected: "true" | "false" | "error:<words in the message>")
FILTERS: list[tuple[str, str]] = [
    # -- NULL and missing properties: three-valued logic; a filter matches only when TRUE
    ("missing = 1", F),
    ("NOT missing = 1", F),
    ("missing <> 1", F),
    ("missing = 1 OR color = 'red'", T),
    ("missing = 1 AND color = 'red'", F),
    ("missing = 1 OR color = 'blue'", F),
    ("NOT (missing = 1 OR color = 'blue')", F),
    ("NOT (missing = 1 AND color = 'blue')", T),
    ("NOT (missing = 1 OR color = 'red')", F),
    ("missing IS NULL", T),
    ("nul IS NULL", T),
    ("color IS NULL", F),
    ("color IS NOT NULL", T),
    ("missing IS NOT NULL", F),
    ("nul = NULL", F),
    ("color = NULL", F),
    ("NOT color = NULL", F),
    ("missing + 1 = 1", F),
    ("missing + 'x' = 'x'", F),
    ("-missing = 0", F),
    ("NOT -missing = 0", F),
    ("EXISTS(missing)", F),
    ("EXISTS(nul)", T),
    ("EXISTS(color)", T),
    ("NOT EXISTS(missing)", T),
    ("EXISTS(COLOR)", T),
    # -- names are case-insensitive, values are not
    ("COLOR = 'red'", T),
    ("user.Color = 'red'", T),
    ("[quantity] = 10", T),
    ("\"color\" = 'red'", T),
    ("color = 'RED'", F),
    ("color <> 'RED'", T),
    ("SYS.LABEL = 'Important'", T),
    ("sys.label = 'important'", F),
    # -- LIKE: % and _, ESCAPE, case-sensitive, Lua magic characters are literal
    ("color LIKE 're%'", T),
    ("color LIKE '%e%'", T),
    ("color LIKE '%'", T),
    ("color LIKE 'r_d'", T),
    ("color LIKE 'r_'", F),
    ("color LIKE 'R%'", F),
    ("color NOT LIKE 'b%'", T),
    ("color NOT LIKE 'r%'", F),
    ("pct LIKE '50!%' ESCAPE '!'", T),
    ("pct LIKE '5!%' ESCAPE '!'", F),
    ("pct LIKE '%!%' ESCAPE '!'", T),
    ("color LIKE '%!%' ESCAPE '!'", F),
    ("under LIKE 'a!_b' ESCAPE '!'", T),
    ("color LIKE 'r!_d' ESCAPE '!'", F),
    ("pct LIKE '50%%' ESCAPE '%'", T),
    ("color LIKE 'r!ed' ESCAPE '!'", T),
    ("uni LIKE 'h_llo'", T),
    ("uni LIKE 'h__llo'", F),
    ("name LIKE 'O''B%'", T),
    ("dots LIKE 'a.b(c)[d]$'", T),
    ("dots LIKE 'a_b(c)[d]_'", T),
    ("dots LIKE 'axb(c)[d]$'", F),
    ("dots LIKE '%(c)%'", T),
    ("missing LIKE 'a%'", F),
    ("missing NOT LIKE 'a%'", F),
    ("color LIKE NULL", F),
    ("color LIKE @pat", T),
    ("pct LIKE '50' + @esc + '%' ESCAPE @esc", T),
    ("Quantity LIKE '1%'", err("LIKE needs strings")),
    ("color LIKE 5", err("LIKE needs strings")),
    ("color LIKE 'x' ESCAPE two", err("ESCAPE character must be a string of length 1")),
    ("color LIKE pat_end ESCAPE '!'", err("ends with its escape character")),
    # -- IN / NOT IN (x IN (a, b) is x = a OR x = b)
    ("color IN ('red', 'blue')", T),
    ("color IN ('blue')", F),
    ("color NOT IN ('blue', 'green')", T),
    ("color NOT IN ('red', 'green')", F),
    ("Quantity IN (5, 10.0)", T),
    ("Quantity IN (1, NULL)", F),
    ("Quantity NOT IN (1, NULL)", F),
    ("Quantity IN (10, NULL)", T),
    ("missing IN (1, 2)", F),
    ("missing NOT IN (1, 2)", F),
    ("sys.To IN ('store-5', 'store-6') OR color = 'x'", T),
    ("color IN (keyname, 'x')", F),
    ("Quantity IN ('10')", err("cannot compare integer with string")),
    ("color IN ('red', 1)", T),
    ("color IN ('blue', 1)", err("cannot compare string with integer")),
    # -- arithmetic and numbers: Int64 and Double as C#
    ("Quantity / 3 = 3", T),
    ("Quantity / 4.0 = 2.5", T),
    ("Quantity / 4 = 2.5", F),
    ("neg / 2 = -3", T),
    ("neg % 4 = -3", T),
    ("Quantity % 3 = 1", T),
    ("7.5 % 2 = 1.5", T),
    ("Quantity * price = 25", T),
    ("price * 2 = 5", T),
    ("Quantity = 10.0", T),
    ("price > 2", T),
    ("Quantity + 1 > 10.5", T),
    ("-Quantity = -10", T),
    ("- -Quantity = 10", T),
    ("+Quantity = 10", T),
    ("2 + 3 * 4 = 14", T),
    ("(2 + 3) * 4 = 20", T),
    ("10 - 2 - 3 = 5", T),
    ("20 / 2 / 5 = 2", T),
    ("1.5E1 = 15", T),
    (".5 = 0.5", T),
    ("big * 1024 = 1125899906842624", T),
    ("big + 1 > big", T),
    ("Quantity / 0 = 1", err("division by zero")),
    ("Quantity % 0 = 1", err("division by zero")),
    ("price / 0 > 1000000", T),
    ("color + 'x' = 'redx'", T),
    ("name + '!' = 'O''Brien!'", T),
    ("color + 1 = 1", err("operator '+' cannot be applied to string and integer")),
    ("color * 2 = 1", err("operator '*' cannot be applied to string and integer")),
    ("flag + 1 = 2", err("operator '+' cannot be applied to boolean and integer")),
    ("-color = 1", err("unary '-' cannot be applied to a string")),
    ("+color = 1", err("unary '+' cannot be applied to a string")),
    # -- types: comparisons need the same type (numbers mix); ordering only where it exists
    ("color = 1", err("cannot compare string with integer")),
    ("Quantity = '10'", err("cannot compare integer with string")),
    ("flag = TRUE", T),
    ("flag <> FALSE", T),
    ("flag = 1", err("cannot compare boolean with integer")),
    ("color < 'z'", err("operator '<' cannot be applied to string values")),
    ("flag > FALSE", err("operator '>' cannot be applied to boolean values")),
    ("when < @later", T),
    ("when = @when", T),
    ("when > @later", F),
    ("when = 5", err("cannot compare DateTime with integer")),
    ("span = @ninety", T),
    ("span > @sixty", T),
    ("when - @earlier = @hour", T),
    ("when + @hour < @later", T),
    ("@hour + when > when", T),
    ("when - @hour = @earlier", T),
    ("span + span > @hour", F),
    ("span - @sixty < @sixty", T),
    ("-span < @sixty", T),
    ("when + when > when", err("operator '+' cannot be applied to DateTime and DateTime")),
    ("guid = @guid", T),
    ("guid <> @guid", F),
    ("guid = 'x'", err("cannot compare Guid with string")),
    ("guid < @guid", err("operator '<' cannot be applied to Guid values")),
    ("raw = @raw", T),
    # -- system properties from the header and from the broker
    ("sys.MessageId = 'm-1'", T),
    ("sys.CorrelationId = 'corr-9'", T),
    ("sys.Subject = 'Important'", T),
    ("sys.Label LIKE 'Imp%'", T),
    ("sys.To = 'store-5'", T),
    ("sys.ReplyTo = 'replies'", T),
    ("sys.SessionId = 's-1'", T),
    ("sys.ReplyToSessionId = 'rs-1'", T),
    ("sys.ContentType = 'application/json'", T),
    ("sys.PartitionKey = 's-1'", T),
    ("sys.TimeToLive = @five_min", T),
    ("sys.ScheduledEnqueueTimeUtc = @sched", T),
    ("sys.ScheduledEnqueueTimeUtc + sys.TimeToLive > sys.ScheduledEnqueueTimeUtc", T),
    ("sys.SequenceNumber = 42", T),
    ("sys.Size > 1000", T),
    ("sys.EnqueuedTimeUtc = @enq", T),
    ("sys.DeliveryCount = 0", T),
    ("sys.ExpiresAtUtc IS NULL", T),
    ("EXISTS(sys.MessageId)", T),
    ("sys.To = 5", err("cannot compare string with integer")),
    # -- property(name)
    ("property('color') = 'red'", T),
    ("p('sys.Label') = 'Important'", T),
    ("p('user.COLOR') = 'red'", T),
    ("p(keyname) = 'red'", T),
    ("p('sys.' + 'To') = 'store-5'", T),
    ("p('sys.' + 'SequenceNumber') = 42", T),
    ("p(badkey) = 1", err("the system property 'Nope' does not exist")),
    ("p(Quantity) = 1", err("property() needs a string, not integer")),
    ("p(missing) IS NULL", T),
    ("EXISTS(p(keyname))", T),
    ("EXISTS(p('miss' + 'ing'))", F),
    ("EXISTS(p(missing))", F),
    # -- parameters
    ("color = @c", T),
    ("Quantity > @n", T),
    ("@flag = flag", T),
    ("price = @f", T),
    ("color = @nil", F),
    # -- constants and short-circuit: evaluation stops at the first FALSE (AND) / TRUE (OR)
    ("TRUE", T),
    ("FALSE", F),
    ("NOT FALSE", T),
    ("1 = 1", T),
    ("1 > 1", F),
    ("1 = 0 AND color + 1 = 2", F),
    ("1 = 1 OR color + 1 = 2", T),
    ("color + 1 = 2 AND 1 = 0", err("cannot be applied")),
    ("missing = 1 AND color + 1 = 2", err("cannot be applied")),
]


@pytest.mark.parametrize(("expr", "expected"), FILTERS, ids=[f[0] for f in FILTERS])
def test_sql_filter(evaluate: Any, expr: str, expected: str) -> None:
    check(evaluate("match", compile_filter(SqlRuleFilter(expr, PARAMS)), header()), expected)


MINIMAL: list[tuple[str, str]] = [
    ("sys.CorrelationId IS NULL", T),
    ("sys.CorrelationId = 'x'", F),
    ("NOT sys.CorrelationId = 'x'", F),
    ("EXISTS(sys.CorrelationId)", F),
    ("EXISTS(sys.MessageId)", T),
    ("sys.MessageId = 'only-id'", T),
    ("sys.PartitionKey IS NULL", T),
    ("sys.TimeToLive IS NULL", T),
    ("sys.SequenceNumber IS NULL", T),
    ("color IS NULL", T),
    ("EXISTS(color)", F),
]


@pytest.mark.parametrize(("expr", "expected"), MINIMAL, ids=[f[0] for f in MINIMAL])
def test_message_without_properties(evaluate: Any, expr: str, expected: str) -> None:
    check(evaluate("match", compile_filter(SqlRuleFilter(expr)), header(minimal=True), brk=None), expected)


CORRELATION: list[tuple[CorrelationRuleFilter | SqlRuleFilter, str]] = [
    (CorrelationRuleFilter(label="Important"), T),
    (CorrelationRuleFilter(label="important"), F),
    (CorrelationRuleFilter(correlation_id="corr-9", to="store-5"), T),
    (CorrelationRuleFilter(correlation_id="corr-9", to="other"), F),
    (
        CorrelationRuleFilter(
            correlation_id="corr-9",
            message_id="m-1",
            to="store-5",
            reply_to="replies",
            label="Important",
            session_id="s-1",
            reply_to_session_id="rs-1",
            content_type="application/json",
            properties={"color": "red", "Quantity": 10},
        ),
        T,
    ),
    (CorrelationRuleFilter(properties={"color": "red"}), T),
    (CorrelationRuleFilter(properties={"COLOR": "red"}), T),
    (CorrelationRuleFilter(properties={"color": "Red"}), F),
    (CorrelationRuleFilter(properties={"Quantity": 10}), T),
    (CorrelationRuleFilter(properties={"Quantity": 10.0}), T),
    (CorrelationRuleFilter(properties={"Quantity": "10"}), F),
    (CorrelationRuleFilter(properties={"missing": "x"}), F),
    (CorrelationRuleFilter(properties={"nul": "x"}), F),
    (CorrelationRuleFilter(properties={"when": WHEN, "flag": True, "guid": GUID, "span": timedelta(seconds=90)}), T),
    (CorrelationRuleFilter(properties={"flag": False}), F),
    (CorrelationRuleFilter(properties={"guid": str(GUID)}), F),  # a Guid is not its text
    (CorrelationRuleFilter(properties={"when": codec.to_ms(WHEN)}), F),  # nor a DateTime its ms
    (CorrelationRuleFilter(reply_to_session_id="rs-1", properties={"color": "blue"}), F),
    (TrueRuleFilter(), T),
    (FalseRuleFilter(), F),
]


@pytest.mark.parametrize(("rule_filter", "expected"), CORRELATION, ids=[repr(c[0]) for c in CORRELATION])
def test_correlation_and_boolean_filters(evaluate: Any, rule_filter: Any, expected: str) -> None:
    check(evaluate("match", compile_filter(rule_filter), header()), expected)


def test_correlation_filter_on_a_message_without_those_properties(evaluate: Any) -> None:
    program = compile_filter(CorrelationRuleFilter(correlation_id="corr-9", properties={"color": "red"}))
    assert evaluate("match", program, header(minimal=True), brk=None) == [F]


def test_decoded_program_and_the_program_cache(evaluate: Any) -> None:
    program = compile_filter(SqlRuleFilter("color LIKE 'r%' AND Quantity > 5"))
    assert evaluate("match_decoded", program, header()) == [T]
    assert evaluate("match_many", program, header()) == ["50"]
    assert evaluate("match_many", compile_filter(SqlRuleFilter("color = 'blue'")), header()) == ["0"]


def test_deep_programs_evaluate(evaluate: Any) -> None:
    """The deepest programs the compiler allows decode (cjson) and evaluate (Lua recursion)."""
    chain = "Quantity" + "+1" * 500 + " = 510"
    assert evaluate("match", compile_filter(SqlRuleFilter(chain)), header()) == [T]
    nested = "(" * 64 + "Quantity = 10" + ")" * 64
    assert evaluate("match", compile_filter(SqlRuleFilter(nested)), header()) == [T]
    many = " OR ".join(f"Quantity = {i}" for i in range(50)) + " OR color = 'red'"
    assert evaluate("match", compile_filter(SqlRuleFilter(many)), header()) == [T]


def test_unknown_program_version_is_a_script_error(evaluate: Any) -> None:
    with pytest.raises(redis.ResponseError, match="unsupported program version"):
        evaluate("match", "[2,true]", header())
    with pytest.raises(redis.ResponseError, match="unknown opcode"):
        evaluate("match", '[1,["nope"]]', header())


# ------------------------------------------------------------------------------------ actions
def run_action(evaluate: Any, expr: str, props: dict[str, Any] | None = PROPS) -> Any:
    reply = evaluate("action", compile_action(SqlRuleAction(expr, PARAMS)), header(props=props))
    if reply[0] == "error":
        return err(reply[1])
    new = json.loads(reply[1])
    ap = codec.decode_properties(new.pop("ap"))
    return new, ap


def changed(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What an action changed: new or different values, and removed keys as '<removed>'."""
    out = {k: v for k, v in after.items() if k not in before or before[k] != v}
    out.update({k: "<removed>" for k in before if k not in after})
    return out


# (action, changes to the application properties, changes to the header)
ACTIONS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("SET Quantity = Quantity / 3", {"Quantity": 3}, {}),
    ("SET quantity = quantity + 1", {"Quantity": 11}, {}),
    ("SET newprop = 'x'", {"newprop": "x"}, {}),
    ("SET [my prop] = 1", {"my prop": 1}, {}),
    ("SET price = price * 3", {"price": 7.5}, {}),
    ("REMOVE color", {"color": "<removed>"}, {}),
    ("REMOVE COLOR", {"color": "<removed>"}, {}),
    ("REMOVE missing", {}, {}),
    ("REMOVE color; SET color = 'blue'", {"color": "blue"}, {}),
    ("SET a = 1; SET b = a + 1", {"a": 1, "b": 2}, {}),
    ("SET a = 1 SET b = 2", {"a": 1, "b": 2}, {}),
    ("SET x = missing + 1", {"x": None}, {}),
    ("SET color = NULL", {"color": None}, {}),
    ("SET name = name + '!'", {"name": "O'Brien!"}, {}),
    ("SET flag = flag", {}, {}),
    ("SET flag = FALSE", {"flag": False}, {}),
    ("SET when2 = when + @hour", {"when2": WHEN + timedelta(hours=1)}, {}),
    ("SET d = @later - when", {"d": timedelta(days=1)}, {}),
    ("SET g = guid; SET r = raw", {"g": GUID, "r": b"\x00\x01"}, {}),
    ("SET big = 9007199254740992", {"big": 2**53}, {}),
    ("SET pi = 3.141592653589793", {"pi": 3.141592653589793}, {}),
    ("SET tiny = 0.1 + 0.2", {"tiny": 0.1 + 0.2}, {}),
    ("SET seq = sys.SequenceNumber", {"seq": 42}, {}),
    ("SET lbl = sys.Label", {"lbl": "Important"}, {}),
    ("SET sys.Label = 'relabelled'", {}, {"sj": "relabelled"}),
    ("SET sys.CorrelationId = 'low'", {}, {"ci": "low"}),
    ("SET sys.To = NULL", {}, {"to": "<removed>"}),
    ("SET sys.ReplyTo = color + '-queue'", {}, {"rt": "red-queue"}),
    ("SET sys.TimeToLive = @hour", {}, {"ttl": 3_600_000}),
    ("SET sys.ScheduledEnqueueTimeUtc = @later", {}, {"se": codec.to_ms(WHEN + timedelta(days=1))}),
    ("SET sys.MessageId = 'new-id'; SET sys.SessionId = 's-2'", {}, {"id": "new-id", "sid": "s-2"}),
    ("SET quantity = 1; REMOVE Quantity; SET QUANTITY = 2", {"Quantity": "<removed>", "QUANTITY": 2}, {}),
    ("SET x = QUANTITY; REMOVE Quantity; SET quantity = 1", {"x": 10, "Quantity": "<removed>", "quantity": 1}, {}),
    ("SET y = COLOR; SET NewKey = 1; SET z = newkey", {"y": "red", "NewKey": 1, "z": 1}, {}),
    ("REMOVE COLOR; SET Color = 'blue'", {"color": "<removed>", "Color": "blue"}, {}),
]


@pytest.mark.parametrize(("expr", "ap_changes", "hdr_changes"), ACTIONS, ids=[a[0] for a in ACTIONS])
def test_sql_action(evaluate: Any, expr: str, ap_changes: dict[str, Any], hdr_changes: dict[str, Any]) -> None:
    before = json.loads(header())
    before_ap = codec.decode_properties(before.pop("ap"))
    result = run_action(evaluate, expr)
    assert not isinstance(result, str), result
    new_hdr, new_ap = result
    assert changed(before_ap, new_ap) == ap_changes
    assert changed(before, new_hdr) == hdr_changes


ACTION_ERRORS: list[tuple[str, str]] = [
    ("SET x = 1 / 0", "division by zero"),
    ("SET x = 1.0 / 0", "cannot store a non-finite number"),
    ("SET x = color + 1", "cannot be applied to string and integer"),
    ("SET a = 1; SET x = color * 2", "cannot be applied"),
    ("SET sys.MessageId = NULL", "sys.MessageId cannot be NULL"),
    ("SET sys.Label = 5", "needs a string, not integer"),
    ("SET sys.TimeToLive = 5", "sys.TimeToLive needs a TimeSpan, not integer"),
    ("SET sys.TimeToLive = -@hour", "must be positive"),
    ("SET sys.ScheduledEnqueueTimeUtc = 'soon'", "needs a DateTime, not string"),
    ("SET x = p(badkey)", "the system property 'Nope' does not exist"),
]


@pytest.mark.parametrize(("expr", "words"), ACTION_ERRORS, ids=[a[0] for a in ACTION_ERRORS])
def test_sql_action_errors(evaluate: Any, expr: str, words: str) -> None:
    result = run_action(evaluate, expr)
    assert isinstance(result, str)
    assert result.startswith("error:")
    assert words in result


def test_action_on_a_message_without_application_properties(evaluate: Any) -> None:
    result = run_action(evaluate, "SET a = 'x'; REMOVE b; SET sys.Label = 'y'", props=None)
    assert not isinstance(result, str)
    new_hdr, new_ap = result
    assert new_ap == {"a": "x"}
    assert new_hdr["sj"] == "y"
    # a message whose properties all go away keeps an empty object, which decodes to {}
    result = run_action(evaluate, "REMOVE only", props={"only": 1})
    assert not isinstance(result, str)
    assert result[1] == {}


def test_action_result_is_what_the_codec_reads(evaluate: Any) -> None:
    """The rewritten header splices back into a blob that ServiceBusReceivedMessage-style decoding
    understands: the header JSON from rules_json is valid codec input."""
    result = run_action(evaluate, "SET sys.Label = 'z'; SET n = Quantity * 2")
    assert not isinstance(result, str)
    new_hdr, new_ap = result
    blob = codec.encode({**new_hdr, "ap": codec.encode_properties(new_ap)}, b"body")
    back = codec.header_of(blob)
    assert back["sj"] == "z"
    assert codec.decode_properties(back["ap"])["n"] == 20
    assert codec.body_of(blob) == b"body"


def test_names_equal_but_for_case_resolve_to_the_smallest(evaluate: Any) -> None:
    """Lookups are exact first, then ASCII case-insensitive; among several names that differ only
    in case the byte-wise smallest wins, so the answer never depends on table iteration order."""
    props = {"dUP": 1, "Dup": 2, "DUP": 3, "dup": 4, "dUp": 5}
    hdr = header(props=props)
    for expr, expected in [("dup = 4", T), ("Dup = 2", T), ("DuP = 3", T), ("p('dUP') = 1", T), ("dUp = 5", T)]:
        check(evaluate("match", compile_filter(SqlRuleFilter(expr)), hdr), expected)
    reply = evaluate("action", compile_action(SqlRuleAction("SET DuP = 0; REMOVE dUP")), hdr)
    assert codec.decode_properties(json.loads(reply[1])["ap"]) == {"Dup": 2, "DUP": 0, "dup": 4, "dUp": 5}


def test_blob_round_trip_as_a_fan_out_script_does_it(evaluate: Any) -> None:
    """Split a real stored message in Lua, filter and act, rebuild the blob: the codec reads the
    result, the body is untouched, unchanged properties keep their values and types."""
    body = bytes(range(256)) * 4
    props_in: Any = PROPS
    blob = ServiceBusMessage(body, application_properties=props_in, **SYSTEM).encoded()
    action = compile_action(SqlRuleAction("SET sys.Label = 'routed'; SET Quantity = Quantity * 3; REMOVE nul"))
    assert evaluate("blob", compile_filter(SqlRuleFilter("color = 'blue'")), blob, action) == [b"false"]
    assert evaluate("blob", compile_filter(SqlRuleFilter("color = 'red'")), blob, "") == [b"true"]
    reply = evaluate("blob", compile_filter(SqlRuleFilter("color = 'red'")), blob, action)
    assert reply[0] == b"ok", reply
    new_blob = reply[1]
    assert codec.body_of(new_blob) == body
    header = codec.header_of(new_blob)
    props = codec.decode_properties(header.pop("ap"))
    expected = dict(PROPS, Quantity=30)
    del expected["nul"]
    assert props == expected
    assert {type(v) for v in props.values()} == {type(v) for v in expected.values()}
    old = codec.header_of(blob)
    old.pop("ap")
    assert header == dict(old, sj="routed")


def raw_blob(header: bytes, body: bytes = b"body") -> bytes:
    return b"\x01" + len(header).to_bytes(4, "big") + header + body


def test_untouched_members_are_copied_byte_for_byte(evaluate: Any) -> None:
    """cjson rounds numbers to 14 digits and writes 2.0 as 2: everything an action does not change
    is copied from the stored header text, whatever its spacing; what it sets is written in its
    kind (a double keeps its point)."""
    header = (
        b'{   "id":"m-1" , "sj":"s","ap": { "big" : 9007199254740993, "max":9223372036854775807,'
        b' "two":2.0, "e":1E+300, "esc\\u0041\\"k":"v\\/", "dup":1, "dup":2, "nested":{"$td":1152921504606846977},'
        b' "gone":true } , "pk" : "p"}'
    )
    action = compile_action(SqlRuleAction("SET sys.Label = 'r'; SET f = 5.0; SET i = 5; REMOVE gone; SET dup = dup"))
    reply = evaluate("blob", compile_filter(TrueRuleFilter()), raw_blob(header), action)
    assert reply[0] == b"ok", reply
    text = reply[1][5 : 5 + int.from_bytes(reply[1][1:5], "big")]
    for untouched in (
        b'"id":"m-1"',
        b'"big" : 9007199254740993',
        b'"max":9223372036854775807',
        b'"two":2.0',
        b'"e":1E+300',
        b'"nested":{"$td":1152921504606846977}',
        b'"pk" : "p"',
    ):
        assert untouched in text, text
    assert text.startswith(b"{   ")  # codec.spread's spaces stay
    assert b"gone" not in text and text.count(b'"dup"') == 1
    back = json.loads(text)
    assert back["sj"] == "r"
    assert back["ap"]["f"] == 5.0 and type(back["ap"]["f"]) is float
    assert back["ap"]["i"] == 5 and type(back["ap"]["i"]) is int
    assert back["ap"]["dup"] == 2 and back["ap"]['escA"k'] == "v/"
    assert reply[1][5 + len(text) :] == b"body"


def test_an_action_that_changes_nothing_keeps_the_header(evaluate: Any) -> None:
    header = b'{"id":"x","ap":{"n":18446744073709551615,"f":0.1}}'
    reply = evaluate(
        "blob", compile_filter(TrueRuleFilter()), raw_blob(header), compile_action(SqlRuleAction("REMOVE nope"))
    )
    assert reply == [b"ok", raw_blob(header)]


def test_re_encoded_headers_keep_values_and_types(evaluate: Any) -> None:
    """A header whose numbers cjson reads exactly (integers below 2^53, doubles that are not
    integral) is written again from the decoded tables: same values, same types."""
    header = (
        b'{"id":"8e7d","sj":"v1.05","ap":{"q":7,"p":2.5,"t":0.1,"neg":-12,"s":"x/y","n":null,"b":true,'
        b'"dt":{"$dt":1700000000000},"big":9007199254740991}}'
    )
    action = compile_action(SqlRuleAction("SET d = 1.0; SET i = q * 2; SET s2 = s"))
    reply = evaluate("blob", compile_filter(TrueRuleFilter()), raw_blob(header), action)
    assert reply[0] == b"ok", reply
    back = codec.header_of(reply[1])
    before = json.loads(header)
    assert {k: v for k, v in back.items() if k != "ap"} == {k: v for k, v in before.items() if k != "ap"}
    expected = dict(before["ap"], d=1.0, i=14, s2="x/y")
    assert back["ap"] == expected
    assert {k: type(v) for k, v in back["ap"].items()} == {k: type(v) for k, v in expected.items()}


def test_a_raw_clients_properties_array_is_an_evaluation_error_not_a_script_error(evaluate: Any) -> None:
    """Only a raw client can store "ap" as an array or a number: an array has no such property, a
    number is an evaluation error; an action that cannot write the header back fails that copy."""
    array = raw_blob(b'{"id":"x","ap":[1,2]}')
    assert evaluate("blob", compile_filter(SqlRuleFilter("a IS NULL")), array, "") == [b"true"]
    action = compile_action(SqlRuleAction("SET a = 1"))
    assert evaluate("blob", compile_filter(TrueRuleFilter()), array, action) == [b"error", b"no header"]
    number = raw_blob(b'{"id":"x","ap":5}')
    for program, act in ((compile_filter(SqlRuleFilter("a IS NULL")), ""), (compile_filter(TrueRuleFilter()), action)):
        reply = evaluate("blob", program, number, act)
        assert reply[0] == b"error" and b"not an object" in reply[1], reply
