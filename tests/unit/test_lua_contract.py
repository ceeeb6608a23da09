"""Static contract of the Lua scripts (no Redis needed).

What is checked, per composed script (``sbredis._core.scripts.load``):

* the header comment names KEYS and ARGV, and documents every literal ``ARGV[n]`` and every
  ``fail('CODE')`` the script uses; every code maps to an exception in ``_core.errors``;
* file names and ``SCRIPT_NAMES`` agree, includes resolve, nothing is left unresolved;
* every script Python calls gets the 24 keys of one partition (one cluster slot; complete, receive
  and send the first of them alone, from which partition.lua names the others), or for the
  scripts that include ``keysets`` (forwarding, idle) 24 more per further partition-shaped
  key set under the same hash tag, or publish (``fansets``) the 10 of ``keys.FAN_KEY_NAMES`` per
  subscription; ``includes/partition.lua`` binds ``KEYS[1..24]`` in the order of
  ``keys.PARTITION_KEY_NAMES`` and ``includes/keysets.lua`` the further sets the same way;
* no keyspace scans (KEYS, SCAN, RANDOMKEY) and no key names built in Lua. The heuristic: the
  scripts are tokenised (comments dropped, strings kept) and for every ``redis.call`` /
  ``redis.pcall`` / ``call_many`` the second argument must be exactly one named key variable
  (``K_CFG``, ``MAIN.ready``, ``G.log``, ``S.m.log``, ``T.st``, ``SES.sr``, ``Z.sa`` (a session key
  table: SES or a key set's ``ses``), ...), and ``KEYS`` may only appear,
  indexed by an integer literal, in ``includes/partition.lua`` (or by ``b + literal`` in
  ``includes/keysets.lua``; or as ``K_CFG = KEYS[1]`` (and ``K_FJ = KEYS[2]``) in ``send.lua``,
  ``complete.lua`` and ``receive.lua``
  (``FAST_PATH_SCRIPTS``), whose one-message paths run before partition.lua's opening and name
  their keys from it, run against keys.py's names). A further
  key set is always bound to a variable named S or T. The only key-less command allowed is TIME;
  ``call_many``'s own body forwards its ``key`` parameter;
* each composed script compiles as Lua 5.1 (``lupa.lua51``; Redis embeds Lua 5.1), and its
  bytecode reads no global outside the Redis sandbox and writes none (Redis refuses to run a
  script that sets a global, and an unknown global is usually a typo that is nil at run time).
"""

from __future__ import annotations

import hashlib
import re
import struct
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from redis.crc import key_slot

from sbredis import ServiceBusMessage, ServiceBusReceivedMessage, ServiceBusReceiveMode
from sbredis._core import errors, fanout, keys, ops, protocol, scripts
from sbredis._core.entity import build_queue, partition_config

ROOT = Path(__file__).resolve().parents[2]
LUA = Path(str(scripts.lua_dir()))  # a plain folder in a source checkout
INCLUDES = LUA / "includes"
SCRIPT_FILES = sorted(LUA.glob("*.lua"))
INCLUDE_FILES = sorted(INCLUDES.glob("*.lua"))
KEYSET_VARIABLES = ("S", "T")  # names a script binds a further key set (includes/keysets.lua) to
KEYSET_SCRIPTS = {"cancel_topic_scheduled", "forward_out", "forward_ack", "idle", "tx_commit"}
# Scripts with a KEYS layout of their own, documented in their header and checked by their own test
# below: dashboard_counts takes 18 of a partition's keys per partition, many partitions per call
# (the whole 24 of a partition and of its transfer queue would be 48 keys a partition at every read).
# In them KEYS is indexed as KEYS[base + i] and redis calls name keys as K(<literal>) or a parameter.
OWN_LAYOUT_SCRIPTS = {"dashboard_counts"}
# Scripts whose one-message path runs before includes/partition.lua's opening (Redis runs a script's
# whole body at every call) and names the keys it uses from KEYS[1] itself: checked against keys.py
# by test_{send,complete,receive}_fast_path_names_what_keys_py_names.
FAST_PATH_SCRIPTS = {"complete", "receive", "send"}
# the uses of KEYS they make: the cfg key, and after it a subscription's fan-out journal (receive)
FAST_PATH_KEYS = (["K_CFG", "=", "KEYS", "[", "1", "]"], ["K_FJ", "=", "KEYS", "[", "2", "]"])

BANNED_COMMANDS = {"KEYS", "SCAN", "RANDOMKEY", "FLUSHALL", "FLUSHDB"}
KEYLESS_COMMANDS = {"TIME"}
# What Redis's Lua sandbox offers (and a script may read).
SANDBOX_GLOBALS = {
    "redis",
    "KEYS",
    "ARGV",
    "unpack",
    "tonumber",
    "tostring",
    "type",
    "pairs",
    "ipairs",
    "next",
    "select",
    "error",
    "assert",
    "pcall",
    "string",
    "math",
    "table",
    "cjson",
    "cmsgpack",
    "bit",
    "struct",
    "rawget",
    "rawset",
    "rawequal",
    "setmetatable",
    "getmetatable",
    "_G",  # rawget(_G, 'os'): os.clock where Redis has it (8.2), without failing where it has none
}


# --------------------------------------------------------------------------------------- lexer
_TOKEN = re.compile(
    r"""
     (?P<lcomment>--\[(?P<eq>=*)\[.*?\](?P=eq)\])
    |(?P<comment>--[^\n]*)
    |(?P<lstr>\[(?P<eq2>=*)\[.*?\](?P=eq2)\])
    |(?P<str>'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")
    |(?P<num>0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)
    |(?P<name>[A-Za-z_]\w*)
    |(?P<op>\.\.\.|\.\.|==|~=|<=|>=|[-+*/%^\#<>=(){}\[\];:,.])
    |(?P<ws>\s+)
    """,
    re.S | re.X,
)


def tokens(src: str) -> list[tuple[str, str]]:
    """(kind, text) tokens of Lua source; comments and whitespace dropped, strings kept."""
    out = []
    pos = 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None:
            raise AssertionError(f"cannot tokenise Lua at {src[pos : pos + 40]!r}")
        kind = m.lastgroup
        if kind in ("eq", "eq2"):  # the named sub-groups of long brackets
            kind = "lcomment" if m.group("lcomment") else "lstr"
        if kind not in ("ws", "comment", "lcomment"):
            out.append(("str" if kind == "lstr" else kind, m.group()))
        pos = m.end()
    return out


def code_only(src: str) -> str:
    return " ".join(text for _, text in tokens(src))


def call_sites(src: str) -> list[tuple[str, list[list[tuple[str, str]]]]]:
    """(callee, args) of every redis.call / redis.pcall / call_many call; args as token lists."""
    toks = tokens(src)
    out = []
    i = 0
    while i < len(toks):
        callee = None
        if (
            toks[i] == ("name", "redis")
            and i + 3 < len(toks)
            and toks[i + 1][1] == "."
            and toks[i + 2][1] in ("call", "pcall")
            and toks[i + 3][1] == "("
        ):
            callee, start = "redis." + toks[i + 2][1], i + 4
        elif (
            toks[i] == ("name", "call_many")
            and i + 1 < len(toks)
            and toks[i + 1][1] == "("
            and not (i > 0 and toks[i - 1] == ("name", "function"))
        ):
            callee, start = "call_many", i + 2
        if callee is None:
            i += 1
            continue
        args: list[list[tuple[str, str]]] = [[]]
        depth = 0
        j = start
        while True:
            kind, text = toks[j]
            if text in ("(", "{", "[") and kind == "op":
                depth += 1
            elif text in (")", "}", "]") and kind == "op":
                if depth == 0:
                    break
                depth -= 1
            if text == "," and kind == "op" and depth == 0:
                args.append([])
            else:
                args[-1].append((kind, text))
            j += 1
        out.append((callee, [a for a in args if a]))
        i = j
    return out


def lua_string(tok: tuple[str, str]) -> str:
    assert tok[0] == "str", tok
    return tok[1][1:-1]


# ----------------------------------------------------------------------------------- headers
def header_of(path: Path) -> str:
    text = path.read_text()
    m = re.match(r"\s*--\[(=*)\[(.*?)\]\1\]", text, re.S)
    assert m, f"{path.name} does not start with a --[[ ... ]] header comment"
    return m.group(2)


def own_body(path: Path) -> str:
    """The file's code without comments (its includes not inlined)."""
    return code_only(path.read_text())


@cache
def partition_bindings() -> dict[str, int]:
    """Key variable (K_CFG, MAIN.log, DLQ.ready, ...) -> KEYS index, from includes/partition.lua's
    binding of all 24 keys as they come (given the cfg key alone, it names the same variables from
    it: test_partition_lua_names_what_keys_py_names)."""
    code = code_only((INCLUDES / "partition.lua").read_text())
    found: dict[str, int] = {}
    # a whole assignment of KEYS[i]s: not a field of a table, not the start of a longer list
    binding = r"(?<![,{] )\b((?:\w+ , )*\w+) = ((?:KEYS \[ \d+ \] , )*KEYS \[ \d+ \])(?! ,)"
    for names, values in re.findall(binding, code):
        ns = [n.strip() for n in names.split(",")]
        vs = [int(v) for v in re.findall(r"KEYS \[ (\d+) \]", values)]
        assert len(ns) == len(vs), (names, values)
        found.update(zip(ns, vs, strict=True))
    for table, body in re.findall(r"(\w+) = \{(.*?)\}", code):
        for field, idx in re.findall(r"(\w+) = KEYS \[ (\d+) \]", body):
            found[f"{table}.{field}"] = int(idx)
    return found


def key_variables(keysets: bool = False) -> set[str]:
    """Expressions that name a partition key: the bindings, plus G.<field> for a group table; with
    `keysets`, the fields of a further key set bound to S or T (includes/keysets.lua)."""
    names = set(partition_bindings())
    session_fields = {n.split(".", 1)[1] for n in names if n.startswith("SES.")}
    names |= {"G." + n.split(".", 1)[1] for n in names if n.startswith(("MAIN.", "DLQ."))}
    names |= {"Z." + f for f in session_fields}
    if keysets:
        fields = {n.split(".", 1)[1] for n in partition_bindings() if n.startswith(("MAIN.", "DLQ."))}
        for v in KEYSET_VARIABLES:
            names |= {f"{v}.{k}" for k in ("cfg", "st", "sched", "exp", "dd")}
            names |= {f"{v}.{g}.{f}" for g in ("m", "d") for f in fields}
            names |= {f"{v}.ses.{f}" for f in session_fields}
    return names


# ------------------------------------------------------------------------- Python call sites
# The paired namespaces' lease script (siphon_lease; syphon_lease once paired namespaces are in
# sbredis/paired/) is built by the paired-namespace code, not in .protocol.
PAIRED_SCRIPTS = set(scripts.SCRIPT_NAMES) & {"siphon_lease", "syphon_lease"}


SINGLE_KEYSET = set(protocol.MODULES) - KEYSET_SCRIPTS - OWN_LAYOUT_SCRIPTS - {"publish"}  # one partition's 24 keys
# ... or the first of them (cfg) alone, from which includes/partition.lua names the others
CFG_KEY_SCRIPTS = {"complete", "receive", "send"}


def python_called_scripts() -> set[str]:
    """Every script a protocol module builds, plus siphon_lease (paired namespaces)."""
    return set(protocol.MODULES) | PAIRED_SCRIPTS


# ===================================================================================== tests
def test_there_are_scripts_and_includes() -> None:
    assert len(SCRIPT_FILES) >= 10
    assert {p.stem for p in INCLUDE_FILES} >= {"partition", "messages"}


def test_script_names_match_files_both_ways() -> None:
    assert len(set(scripts.SCRIPT_NAMES)) == len(scripts.SCRIPT_NAMES), "SCRIPT_NAMES has duplicates"
    files = {p.stem for p in SCRIPT_FILES}
    assert set(scripts.SCRIPT_NAMES) - files == set(), "SCRIPT_NAMES entries without a lua file"
    assert files - set(scripts.SCRIPT_NAMES) == set(), "lua files missing from SCRIPT_NAMES"


def _header_cases() -> list[object]:
    out: list[object] = []
    for p in SCRIPT_FILES:
        out.append(pytest.param(p, id=p.stem))
    return out


@pytest.mark.parametrize("path", _header_cases())
def test_header_names_keys_and_argv(path: Path) -> None:
    header = header_of(path)
    assert re.search(rf"^\s*{re.escape(path.stem)}:", header, re.M), "header should open with '<name>: purpose'"
    keys_lines = [ln for ln in header.splitlines() if ln.strip().startswith("KEYS:")]
    assert keys_lines, f"{path.name}: header has no 'KEYS:' line"
    assert str(keys.NUM_PARTITION_KEYS) in keys_lines[0], f"{path.name}: KEYS line does not say how many keys"
    assert "ARGV" in header, f"{path.name}: header does not describe ARGV (say 'ARGV: none' if it takes none)"
    assert re.search(r"^\s*Returns:", header, re.M), f"{path.name}: header does not describe the reply"


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda p: p.stem)
def test_header_documents_every_literal_argv_index(path: Path) -> None:
    documented = {int(n) for n in re.findall(r"ARGV\[(\d+)", header_of(path))}
    used = {int(n) for n in re.findall(r"ARGV \[ (\d+) \]", own_body(path))}
    assert used <= documented, f"{path.name} reads ARGV{sorted(used - documented)} without documenting them"


@pytest.mark.parametrize("path", SCRIPT_FILES, ids=lambda p: p.stem)
def test_header_documents_error_codes_and_python_maps_them(path: Path) -> None:
    body = own_body(path)
    codes = set(re.findall(r"fail \( '(\w+)' \)", body))
    if "check_receive (" in body:
        codes |= {"NOTFOUND", "DISABLED"}
    if not codes:
        return
    errors_lines = re.search(r"^\s*Errors:(.*?)(?=^\s*\w+:|\Z)", header_of(path), re.M | re.S)
    assert errors_lines, f"{path.name} can fail with {sorted(codes)} but its header has no 'Errors:'"
    documented = set(re.findall(r"\b[A-Z]{3,}\b", errors_lines.group(1)))
    assert codes <= documented, f"{path.name}: undocumented error codes {sorted(codes - documented)}"
    assert codes <= set(errors.LUA_ERRORS), f"codes with no Python exception: {sorted(codes - set(errors.LUA_ERRORS))}"


def test_every_fail_code_in_any_script_is_mapped() -> None:
    all_codes = set()
    for path in [*SCRIPT_FILES, *INCLUDE_FILES]:
        all_codes |= set(re.findall(r"fail \( '(\w+)' \)", own_body(path)))
    assert all_codes
    assert all_codes <= set(errors.LUA_ERRORS)


@pytest.mark.parametrize("path", [*SCRIPT_FILES, *INCLUDE_FILES], ids=lambda p: p.name)
def test_every_include_resolves(path: Path) -> None:
    text = path.read_text()
    for line in text.splitlines():
        if line.startswith("--@include"):
            m = re.fullmatch(r"--@include (\w+)\s*", line)
            assert m, f"{path.name}: malformed include line {line!r} (it would be left in the script)"
            assert (INCLUDES / f"{m.group(1)}.lua").is_file(), f"{path.name}: no includes/{m.group(1)}.lua"


@pytest.mark.parametrize("name", scripts.SCRIPT_NAMES)
def test_load_composes_without_leftover_includes(name: str) -> None:
    s = scripts.load(name)
    assert s.name == name
    assert "--@include" not in s.source
    assert s.sha == hashlib.sha1(s.source.encode()).hexdigest(), "EVALSHA needs the SHA1 of the exact source"
    raw = (LUA / f"{name}.lua").read_text()
    for inc in re.findall(r"^--@include (\w+)", raw, re.M):
        first_line = (INCLUDES / f"{inc}.lua").read_text().splitlines()[0]
        assert first_line in s.source
    # each include inlined once: a second copy would redeclare every local (Lua caps them at 200)
    for inc in INCLUDE_FILES:
        marker = header_of(inc).strip().splitlines()[0]
        assert s.source.count(marker) <= 1, f"{inc.name} inlined twice into {name}"


def test_composed_scripts_keep_only_the_include_functions_they_reach() -> None:
    text = (
        "local function used(x)\n  return helper(x)\nend\n"
        "local function helper(x)\n  return x\nend\n"
        "-- unused() is named in a comment only\n"
        "local function unused()\n  return dropped_too()\nend\n"
        "local function dropped_too()\n  return 1\nend\n"
        "return used(1)\n"
    )
    pruned = scripts._prune(text)
    assert "local function used(" in pruned and "local function helper(" in pruned
    assert "local function unused(" not in pruned and "local function dropped_too(" not in pruned
    assert "return used(1)" in pruned
    complete = scripts.load("complete").source
    assert "local function complete_held(" in complete
    assert "local function sweep(" not in complete  # only the receive side sweeps


def test_load_of_unknown_script_fails() -> None:
    with pytest.raises(FileNotFoundError):
        scripts.load("no_such_script")


def test_partition_lua_binds_all_keys_in_keys_py_order() -> None:
    bindings = dict(partition_bindings())
    # the one key past the 24, which only publish and a subscription's receive pass
    assert bindings.pop("K_FJ") == keys.NUM_PARTITION_KEYS + 1
    assert keys.journal_key("t", 3).startswith(keys.partition_tag("t", 3))
    by_index = sorted(bindings.values())
    assert by_index == list(range(1, keys.NUM_PARTITION_KEYS + 1)), "each KEYS[i] bound exactly once"
    for var, idx in bindings.items():
        if var.startswith("K_"):
            name = var[2:].lower()
        else:
            table, field = var.split(".")
            assert table in ("MAIN", "DLQ", "SES"), var
            name = "d:" + field if table == "DLQ" else field
        assert keys.PARTITION_KEY_NAMES[idx - 1] == name, (
            f"partition.lua binds {var} to KEYS[{idx}] but keys.py puts {keys.PARTITION_KEY_NAMES[idx - 1]!r} there"
        )


def test_keys_is_used_only_in_partition_lua_and_only_with_literal_indices() -> None:
    for path in [*SCRIPT_FILES, *INCLUDE_FILES]:
        toks = tokens(path.read_text())
        for i, tok in enumerate(toks):
            if tok != ("name", "KEYS"):
                continue
            if path.name in ("keysets.lua", "fansets.lua"):
                if toks[i - 1] == ("op", "#"):  # keyset_count(): #KEYS
                    continue
                assert [t for _, t in toks[i + 1 : i + 4]] == ["[", "b", "+"] and toks[i + 4][0] == "num", (
                    f"keysets.lua indexes KEYS by something other than b + literal at token {i}"
                )
                continue
            if path.stem in OWN_LAYOUT_SCRIPTS:
                assert toks[i - 1] == ("op", "#") or [t for _, t in toks[i + 1 : i + 4]] == ["[", "base", "+"], (
                    f"{path.name} indexes KEYS by something other than base + i at token {i}"
                )
                continue
            if path.stem in FAST_PATH_SCRIPTS and [t for _, t in toks[i - 2 : i + 4]] in FAST_PATH_KEYS:
                continue  # its fast path, before partition.lua's opening (test_*_fast_path_names_what_keys_py_names)
            assert path.name == "partition.lua", f"{path.name} uses KEYS directly; use the names of partition.lua"
            if toks[i - 1] == ("op", "#") or toks[i - 2 : i] == [("name", "PK"), ("op", "=")]:
                continue  # one key or 24; PK = KEYS (test_partition_lua_names_what_keys_py_names)
            assert toks[i + 1][1] == "[" and toks[i + 2][0] == "num" and toks[i + 3][1] == "]", (
                f"KEYS indexed by something other than an integer literal in {path.name}"
            )


@pytest.mark.parametrize(
    ("path", "partition"), [("orders", 0), ("a.b-c_d/e", 15), ("t/Subscriptions/s", 3), ("q/$Transfer", 1)]
)
def test_partition_lua_names_what_keys_py_names(lua51: Any, path: str, partition: int) -> None:
    """Given the cfg key alone, includes/partition.lua names the same 24 keys keys.py does (run in
    Lua 5.1, as Redis embeds); given all 24, it binds them as they come."""
    bound = sorted(
        (v for v, i in partition_bindings().items() if i <= keys.NUM_PARTITION_KEYS),
        key=partition_bindings().__getitem__,
    )
    src = (INCLUDES / "partition.lua").read_text() + f"\nreturn {{{', '.join(bound)}}}\n"
    full = keys.entity_keys(path, partition)
    for given in (keys.cfg_key(path, partition), full):
        g = lua51.globals()
        g.KEYS, g.ARGV = lua51.table(*(k.encode() for k in given)), lua51.table(b"")
        named = lua51.execute(src.encode())
        assert [named[i].decode() for i in range(1, len(bound) + 1)] == list(full)


def run_fast_path(
    lua51: Any, script: str, given: str | list[str], argv: list[bytes], replies: dict[bytes, Any]
) -> tuple[Any, list[tuple[str, str]]]:
    """Run `script`'s code before ``--@include partition`` (its fast path) in Lua 5.1 with KEYS the
    cfg key `given` alone (or the keys `given`) and a stand-in redis.call answering each command
    from `replies` (command -> function of the key name; 1 when absent). The fast path's reply (the
    string 'general path' when it falls through) and the (command, key) of each call made."""
    src = (LUA / f"{script}.lua").read_text()
    fast = src[: src.index("--@include partition")] + "\nreturn 'general path'\n"
    g = lua51.globals()
    given = [given] if isinstance(given, str) else given
    g.KEYS, g.ARGV = lua51.table(*(k.encode() for k in given)), lua51.table(*argv)
    calls: list[tuple[str, str]] = []

    def call(cmd: bytes, key: bytes | None = None, *rest: Any) -> Any:
        calls.append((cmd.decode(), key.decode() if key else ""))
        reply = replies.get(cmd, lambda key: 1)(key.decode() if key else "")
        return lua51.table(*reply) if isinstance(reply, list) else reply

    g.redis = lua51.table_from({b"call": call, b"error_reply": lambda e: e})
    return lua51.execute(fast.encode()), calls


FAST_PATH_ENTITIES = [("orders", 0), ("a.b-c_d/e", 15), ("t/Subscriptions/s", 3)]


@pytest.mark.parametrize(("path", "partition"), FAST_PATH_ENTITIES)
def test_send_fast_path_names_what_keys_py_names(lua51: Any, path: str, partition: int) -> None:
    """send.lua's fast path runs before partition.lua's opening and names the keys it uses itself:
    run in Lua 5.1 with a stand-in redis.call (an entity with a default TTL, so that every write is
    made), each command goes to the key keys.py names, under partition.lua's variable name."""
    full = dict(zip(keys.PARTITION_KEY_NAMES, keys.entity_keys(path, partition), strict=True))
    replies = {
        b"HMGET": lambda key: [b"Active", b"", b"0", b"1000", b"100000", b"5"] if key == full["cfg"] else [b"3", b"0"],
        b"TIME": lambda key: [b"1700000000", b"0"],
    }
    reply, calls = run_fast_path(lua51, "send", full["cfg"], [b"1", b"1", b"blob", b""], replies)
    assert list(reply.values()) == [1700000000000, 4]
    assert calls == [
        ("HMGET", full["cfg"]),
        ("HMGET", full["st"]),
        ("TIME", ""),
        ("HSET", full["st"]),  # the cursor, which st lacked
        ("XADD", full["log"]),
        ("HSET", full["st"]),
        ("ZADD", full["exp"]),
    ]


@pytest.mark.parametrize("group", ["m", "d"])
@pytest.mark.parametrize(("path", "partition"), FAST_PATH_ENTITIES)
def test_complete_fast_path_names_what_keys_py_names(lua51: Any, path: str, partition: int, group: str) -> None:
    """complete.lua's one-message path runs before partition.lua's opening and names the keys it
    uses itself: run in Lua 5.1 with a stand-in redis.call (a twice-delivered message whose lock was
    taken long ago, so that every write is made), each command goes to the key keys.py names for the
    group, under partition.lua's variable name."""
    full = dict(zip(keys.PARTITION_KEY_NAMES, keys.entity_keys(path, partition), strict=True))
    g = "d:" if group == "d" else ""
    replies = {
        b"HMGET": lambda key: [b"Active", b"", b"60000"],
        b"HGET": lambda key: b"nn|1700000001000|m|0|1024|2" if key == full[g + "lk"] else None,
        b"TIME": lambda key: [b"1700000000", b"0"],
    }
    reply, calls = run_fast_path(lua51, "complete", full["cfg"], [group.encode(), b"1", b"nn", b"7", b""], replies)
    assert list(reply.values()) == [0]
    assert calls == [
        ("HMGET", full["cfg"]),
        ("HGET", full[g + "lk"]),
        ("TIME", ""),
        ("XDEL", full[g + "log"]),
        ("HDEL", full[g + "lk"]),
        ("ZREM", full[g + "locked"]),
        ("HDEL", full[g + "dc"]),
        ("HINCRBY", full["st"]),
        ("HSET", full["st"]),  # last use: the lock was taken 59 s before
    ]
    # another generation's entity, several messages, no nonce: the general path, nothing written
    for argv in (
        [b"m", b"1", b"nn", b"7", b"other-gen"],
        [b"m", b"2", b"nn", b"7", b"8", b""],
        [b"m", b"1", b"", b"7", b"nn", b""],
    ):
        replies[b"HMGET"] = lambda key: [b"Active", b"gen-1", b"60000"]
        reply, calls = run_fast_path(lua51, "complete", full["cfg"], argv, replies)
        assert reply == b"general path"
        assert all(cmd in ("HMGET", "HGET", "TIME") for cmd, _ in calls), calls


@pytest.mark.parametrize(("path", "partition"), FAST_PATH_ENTITIES)
def test_receive_fast_path_names_what_keys_py_names(lua51: Any, path: str, partition: int) -> None:
    """receive.lua's one-message path runs before partition.lua's opening and names the keys it
    uses itself: run in Lua 5.1 with a stand-in redis.call (a redelivered message with a TTL taken
    from ready, the sweep sets present but nothing due, so that every key is read or written),
    each command goes to the key keys.py names, under partition.lua's variable name."""
    full = dict(zip(keys.PARTITION_KEY_NAMES, keys.entity_keys(path, partition), strict=True))
    journal = keys.journal_key("t", partition)
    entry = [lua51.table(b"5-0", lua51.table(b"b", b"blob", b"e", b"1699999999000", b"x", b"1800000000000"))]
    replies = {
        b"HMGET": lambda key: [b"Active", b"60000", b"", b""],
        b"EXISTS": lambda key: 0 if key == journal else 1,
        b"ZRANGEBYSCORE": lambda key: [],
        b"ZRANGE": lambda key: [b"5"] if key == full["ready"] else [],
        b"XRANGE": lambda key: entry if key == full["log"] else [],
        b"HGET": lambda key: b"1" if key == full["dc"] else None,
        b"TIME": lambda key: [b"1700000000", b"0"],
    }
    argv = [b"m", b"L", b"1", b"nn", b"100", b""]
    reply, calls = run_fast_path(lua51, "receive", full["cfg"], argv, replies)
    assert list(reply.values())[:6] == [
        1700000000000,
        1700000060000,
        0,
        b"5",
        2,
        b"blob",
    ]
    assert calls == [
        ("HMGET", full["cfg"]),
        ("TIME", ""),
        ("EXISTS", full["sched"]),  # with exp and ready
        ("EXISTS", full["sched"]),  # with exp
        ("ZRANGEBYSCORE", full["sched"]),
        ("ZRANGEBYSCORE", full["exp"]),
        ("ZRANGEBYSCORE", full["locked"]),
        ("ZRANGE", full["ready"]),
        ("XRANGE", full["log"]),
        ("HGET", full["dc"]),
        ("ZREM", full["ready"]),
        ("HSET", full["st"]),
        ("ZREM", full["exp"]),
        ("HSET", full["lk"]),
        ("ZADD", full["locked"]),
    ]
    # a subscription's receive with its fan-out journal present: the general path, nothing written
    replies[b"EXISTS"] = lambda key: 1
    reply, calls = run_fast_path(lua51, "receive", [full["cfg"], journal], argv, replies)
    assert reply == b"general path"
    assert calls == [("HMGET", full["cfg"]), ("EXISTS", journal)]


def test_keysets_lua_binds_each_further_set_in_keys_py_order() -> None:
    pairs = re.findall(r"(\w+) = KEYS \[ b \+ (\d+) \]", code_only((INCLUDES / "keysets.lua").read_text()))
    assert sorted(int(o) for _, o in pairs) == list(range(1, keys.NUM_PARTITION_KEYS + 1))
    for field, off in pairs:
        expected = keys.PARTITION_KEY_NAMES[int(off) - 1]
        if field not in ("cfg", "st", "sched", "exp", "dd") and 12 <= int(off) <= 17:
            field = "d:" + field  # the dead-letter group's fields repeat the main group's names
        assert expected == field, (field, off, expected)


def test_fansets_lua_binds_each_set_in_keys_py_order() -> None:
    code = code_only((INCLUDES / "fansets.lua").read_text())
    fan, check = code.split("function checkset", 1)
    assert re.findall(r"(\w+) = KEYS \[ b \+ (\d+) \]", check) == [
        (n, str(i + 1)) for i, n in enumerate(keys.CHECK_KEY_NAMES)
    ]
    assert keys.PARTITION_KEY_NAMES[: len(keys.CHECK_KEY_NAMES)] == keys.CHECK_KEY_NAMES
    code = fan
    pairs = re.findall(r"(\w+) = KEYS \[ b \+ (\d+) \]", code)
    assert sorted(int(o) for _, o in pairs) == list(range(1, len(keys.FAN_KEY_NAMES) + 1))
    in_d = {o for body in re.findall(r"\bd = \{([^{}]*)\}", code) for o in re.findall(r"KEYS \[ b \+ (\d+) \]", body)}
    for field, off in pairs:
        name = "d:" + field if off in in_d else field  # the dead-letter group repeats the main group's names
        assert keys.FAN_KEY_NAMES[int(off) - 1] == name, (field, off)
    fan = keys.subscription_fan_keys("t", "a", 3)
    assert fan == tuple(k for k in keys.subscription_keys("t", "a", 3) if k.split(":s:a:", 1)[1] in keys.FAN_KEY_NAMES)


def test_publish_passes_the_fan_keys_of_each_subscription() -> None:
    c = fanout.publish_call("t", 5, fanout.TopicSubs("3", ("a", "b.c"), ("a",)), "", [])
    n, f = keys.NUM_PARTITION_KEYS, len(keys.FAN_KEY_NAMES)
    assert len(c.keys) == n + 1 + 2 * f and len(set(c.keys)) == len(c.keys)
    assert c.keys[:n] == keys.partition_keys("t", 5)
    assert c.keys[n] == keys.journal_key("t", 5)
    assert c.keys[n + 1 :] == keys.subscription_fan_keys("t", "a", 5) + keys.subscription_fan_keys("t", "b.c", 5)
    assert len({key_slot(k.encode()) for k in c.keys}) == 1


def test_a_subscriptions_forward_out_passes_its_topic_partitions_journal_after_the_two_key_sets() -> None:
    c = fanout.forward_out_call("t/Subscriptions/a", 5)
    n = keys.NUM_PARTITION_KEYS
    assert len(c.keys) == 2 * n + 1 and len(set(c.keys)) == len(c.keys)
    assert c.keys[:n] == keys.subscription_keys("t", "a", 5)
    assert c.keys[2 * n] == keys.journal_key("t", 5)
    assert len({key_slot(k.encode()) for k in c.keys}) == 1
    assert "K_FJ = key_after(1)" in (LUA / "forward_out.lua").read_text()


def _multi_keyset_calls() -> list[object]:
    subs = fanout.TopicSubs("3", ("a", "b.c"), ("a",))
    return [
        pytest.param(fanout.cancel_call("t", 5, subs, [1]), 3, id="cancel_topic_scheduled"),
        pytest.param(fanout.forward_out_call("q", 5), 2, id="forward_out"),
        pytest.param(fanout.forward_ack_call("q", 5, []), 2, id="forward_ack"),
        pytest.param(fanout.idle_call("t", "topic", 5, ["a", "b.c"], "check", 0), 3, id="idle"),
        pytest.param(fanout.forward_in_call("q", 5, "s", []), 1, id="forward_in"),
        pytest.param(_tx_call(), 2, id="tx_commit"),
    ]


def _tx_call() -> ops.Call:
    from sbredis import ServiceBusMessage
    from sbredis._core.transaction import TxBuffer

    tx = TxBuffer()
    tx.add_send(ops.EntityMeta("a.b-c", 4, False, 1024), [ServiceBusMessage("x", partition_key="k")])
    tx.add_send(ops.EntityMeta("other", 1, False, 1024), [ServiceBusMessage("y")])
    plan = tx.plan()
    assert plan is not None and plan.call is not None and plan.transfers == ("other",)
    return plan.call


@pytest.mark.parametrize(("c", "sets"), _multi_keyset_calls())
def test_multi_keyset_calls_stay_in_one_slot(c: ops.Call, sets: int) -> None:
    """publish/forwarding/idle calls pass 24 keys per key set, all under one partition's hash tag."""
    assert len(c.keys) == sets * keys.NUM_PARTITION_KEYS
    assert len(set(c.keys)) == len(c.keys)
    assert len({key_slot(k.encode()) for k in c.keys}) == 1
    for i in range(sets):
        n = keys.NUM_PARTITION_KEYS
        chunk = c.keys[i * n : (i + 1) * n]
        assert [k.rsplit(":", 1)[1] for k in chunk] == [n.rsplit(":", 1)[-1] for n in keys.PARTITION_KEY_NAMES]
    if c.script.name in KEYSET_SCRIPTS:
        assert "--@include keysets" in (LUA / f"{c.script.name}.lua").read_text()


def test_cfg_fields_lua_reads_are_written_by_python() -> None:
    code = code_only((INCLUDES / "partition.lua").read_text())
    m = re.search(r"redis \. call \( 'HMGET' , K_CFG , (.*?) \)", code)
    assert m, "load_cfg no longer reads the cfg hash with HMGET"
    fields = [lua_string(("str", f.strip())) for f in m.group(1).split(",")]
    written = partition_config(build_queue("q"), 0)
    assert set(fields) <= set(written), f"Lua reads cfg fields Python never writes: {set(fields) - set(written)}"


def test_python_call_sites_name_existing_scripts() -> None:
    called = python_called_scripts()
    assert "send" in called and "receive" in called and "complete" in called
    assert called <= set(scripts.SCRIPT_NAMES), f"Python calls unknown scripts {called - set(scripts.SCRIPT_NAMES)}"
    assert set(scripts.SCRIPT_NAMES) <= called, f"scripts never called: {set(scripts.SCRIPT_NAMES) - called}"


@pytest.mark.parametrize("name", sorted(SINGLE_KEYSET | PAIRED_SCRIPTS))
@pytest.mark.parametrize(("entity", "partition"), [("orders", 0), ("a.b-c_d/e", 15)])
def test_called_scripts_get_the_partition_keys_in_one_slot(name: str, entity: str, partition: int) -> None:
    c = ops.call(name, entity, partition) if name in PAIRED_SCRIPTS else _sample(name, entity, partition)
    assert c.script is scripts.load(name)
    assert c.partition == partition
    if name in CFG_KEY_SCRIPTS:
        assert c.keys == keys.cfg_key(entity, partition) == keys.partition_keys(entity, partition)[:1]
        return
    assert len(c.keys) == keys.NUM_PARTITION_KEYS == 24
    assert c.keys == keys.partition_keys(entity, partition)
    assert len(set(c.keys)) == len(c.keys)
    assert all(k.startswith(keys.partition_tag(entity, partition) + ":") for k in c.keys)
    assert len({key_slot(k.encode()) for k in c.keys}) == 1, "a script call must touch one cluster slot"


def test_partitions_of_one_entity_get_different_hash_tags() -> None:
    tags = {keys.partition_tag("orders", p) for p in range(16)}
    assert len(tags) == 16
    assert keys.partition_tag("orders", 0) != keys.partition_tag("orders2", 0)


@pytest.mark.parametrize("path", [*SCRIPT_FILES, *INCLUDE_FILES], ids=lambda p: p.name)
def test_no_keyspace_scans(path: Path) -> None:
    for callee, args in call_sites(path.read_text()):
        cmd = args[0]
        if cmd[0][0] == "str":
            assert lua_string(cmd[0]).upper() not in BANNED_COMMANDS, f"{path.name}: {callee}({cmd[0][1]}, ...)"
    quoted = {tok[1][1:-1].upper() for tok in tokens(path.read_text()) if tok[0] == "str"}
    assert not (quoted & BANNED_COMMANDS), f"{path.name} mentions {quoted & BANNED_COMMANDS}"


@pytest.mark.parametrize("path", [*SCRIPT_FILES, *INCLUDE_FILES], ids=lambda p: p.name)
def test_redis_calls_use_named_keys_only(path: Path) -> None:
    text = path.read_text()
    allowed = key_variables(keysets="--@include keysets" in text or "--@include fansets" in text)
    sites = call_sites(path.read_text())
    for callee, args in sites:
        cmd = args[0]
        where = f"{path.name}: {callee}({' '.join(t for _, t in cmd)}, ...)"
        if cmd == [("name", "cmd")]:
            # call_many's body: it forwards its own `key` parameter
            assert path.name == "partition.lua", where
            assert args[1] == [("name", "key")], where
            continue
        assert len(cmd) == 1 and cmd[0][0] == "str", f"{where}: the command must be a string literal"
        if lua_string(cmd[0]).upper() in KEYLESS_COMMANDS:
            assert len(args) == 1, where
            continue
        assert len(args) >= 2, f"{where}: no key argument"
        key = "".join(t for _, t in args[1])
        if path.stem in OWN_LAYOUT_SCRIPTS:
            assert re.fullmatch(r"K\(\d+\)|[a-z]\w*", key), f"{where}: key {key!r} is neither K(<literal>) nor a name"
            continue
        assert all(k in ("name", "op") for k, _ in args[1]) and ".." not in key, f"{where}: key built in Lua"
        assert key in allowed, f"{where}: key {key!r} is not one of the named key variables"


def test_call_site_scanner_is_not_vacuous() -> None:
    counts = {p.name: len(call_sites(p.read_text())) for p in [*SCRIPT_FILES, *INCLUDE_FILES]}
    assert sum(counts.values()) > 50, counts
    assert counts["messages.lua"] > 20 and counts["store.lua"] > 5 and counts["tx_commit.lua"] > 5, counts


def test_key_heuristic_catches_bad_calls() -> None:
    """The checks above flag what they are meant to flag."""
    bad = """
        redis.call('SET', KEYS[1] .. ':x', 1)
        redis.call('GET', 'sb:' .. ARGV[1])
        call_many('ZADD', G.ready, t)
        redis.call('keys', '*')
    """
    sites = call_sites(bad)
    assert [c for c, _ in sites] == ["redis.call", "redis.call", "call_many", "redis.call"]
    keys_of = ["".join(t for _, t in args[1]) for _, args in sites]
    assert keys_of == ["KEYS[1]..':x'", "'sb:'..ARGV[1]", "G.ready", "'*'"]
    allowed = key_variables()
    assert [k in allowed for k in keys_of] == [False, False, True, False]
    # comments and strings do not confuse the lexer
    assert call_sites("-- redis.call('KEYS', '*')\n--[[ redis.call('SCAN', 0) ]]\nlocal s = 'redis.call(x)'") == []


# --------------------------------------------------------------------------- Lua 5.1 checks
def compile51(lua: Any, src: str, name: str) -> bytes:
    """The Lua 5.1 bytecode of `src`; AssertionError with the compiler's message on a syntax error."""
    dump = lua.eval(
        "function(s, n) local f, e = loadstring(s, n); if not f then return nil, e end; return string.dump(f), nil end"
    )
    code, err = dump(src.encode(), ("=" + name).encode())
    assert err is None, f"{name} does not compile as Lua 5.1: {err.decode()}"
    return bytes(code)


def globals_of(bytecode: bytes) -> tuple[set[str], set[str]]:
    """(read, written) global names in a Lua 5.1 bytecode chunk (GETGLOBAL / SETGLOBAL)."""
    assert bytecode[:5] == b"\x1bLua\x51", "not Lua 5.1 bytecode"
    little, int_sz, size_t_sz, ins_sz, num_sz = bytecode[6], bytecode[7], bytecode[8], bytecode[9], bytecode[10]
    assert ins_sz == 4
    order = "<" if little else ">"
    pos = 12
    reads: set[str] = set()
    writes: set[str] = set()

    def take(n: int) -> bytes:
        nonlocal pos
        pos += n
        return bytecode[pos - n : pos]

    def integer(size: int) -> int:
        return int.from_bytes(take(size), "little" if little else "big")

    def string() -> bytes:
        n = integer(size_t_sz)
        return take(n)[:-1] if n else b""

    def function() -> None:
        string()  # source
        take(2 * int_sz + 4)  # linedefined, lastlinedefined, nups, numparams, is_vararg, maxstack
        code = [struct.unpack(order + "I", take(4))[0] for _ in range(integer(int_sz))]
        consts: list[object] = []
        for _ in range(integer(int_sz)):
            t = take(1)[0]
            if t == 0:
                consts.append(None)
            elif t == 1:
                consts.append(bool(take(1)[0]))
            elif t == 3:
                consts.append(take(num_sz))
            elif t == 4:
                consts.append(string().decode())
            else:
                raise AssertionError(f"unknown constant type {t}")
        for ins in code:
            op, bx = ins & 0x3F, ins >> 14
            if op == 5:  # GETGLOBAL
                reads.add(str(consts[bx]))
            elif op == 7:  # SETGLOBAL
                writes.add(str(consts[bx]))
        for _ in range(integer(int_sz)):
            function()
        take(int_sz * integer(int_sz))  # line info
        for _ in range(integer(int_sz)):  # local names
            string()
            take(2 * int_sz)
        for _ in range(integer(int_sz)):  # upvalue names
            string()

    function()
    return reads, writes


def test_global_scanner_sees_globals(lua51: Any) -> None:
    reads, writes = globals_of(compile51(lua51, "local a = 1\nx = tonumber(y)\nlocal function f() return z end", "t"))
    assert reads == {"tonumber", "y", "z"}
    assert writes == {"x"}


@pytest.mark.parametrize("name", scripts.SCRIPT_NAMES)
def test_composed_script_compiles_as_lua51(lua51: Any, name: str) -> None:
    compile51(lua51, scripts.load(name).source, name)


def test_compile_check_rejects_lua53_syntax(lua51: Any) -> None:
    with pytest.raises(AssertionError, match="does not compile"):
        compile51(lua51, "local x = 7 // 2", "floor_div")


@pytest.mark.parametrize("name", scripts.SCRIPT_NAMES)
def test_composed_script_uses_only_sandbox_globals(lua51: Any, name: str) -> None:
    reads, writes = globals_of(compile51(lua51, scripts.load(name).source, name))
    assert writes == set(), f"{name} sets globals {sorted(writes)} (Redis refuses: use local)"
    assert reads <= SANDBOX_GLOBALS, f"{name} reads undefined globals {sorted(reads - SANDBOX_GLOBALS)}"


# ------------------------------------------------------------ protocol modules vs. script headers
def header_argv(path: Path) -> list[tuple[int, str]]:
    """(index, text) of each ARGV[<integer>] the header documents after its KEYS line, before
    Returns: (computed positions such as ARGV[3 + k] or ARGV[n+5] are not listed)."""
    header = header_of(path)
    body = header[header.index("KEYS:") :].split("Returns:")[0]
    return [
        (int(m.group(1)), " ".join(m.group(2).split()))
        for m in re.finditer(r"ARGV\[(\d+)\](.*?)(?=ARGV\[|\Z)", body, re.S)
    ]


def header_keysets(path: Path) -> tuple[int, bool]:
    """(key sets always passed, whether 24 more follow per subscription) from the KEYS line."""
    line = " ".join(header_of(path)[header_of(path).index("KEYS:") :].split("ARGV")[0].split())
    fixed = 2 if "then its transfer queue's 24" in line else 1
    return fixed, "then 24 per" in line


def _received(partition: int, seq: int, nonce: str = "ab" * 8) -> ServiceBusReceivedMessage:
    return ServiceBusReceivedMessage(
        ServiceBusMessage("x").encoded(),
        entity_name="q",
        partition_id=partition,
        group="m",
        local_seq=seq,
        delivery_count=1,
        enqueued_ms=1,
        expires_ms=0,
        locked_until_ms=10**13,
        nonce=nonce,
        receive_mode=ServiceBusReceiveMode.PEEK_LOCK,
    )


M, L = protocol.Group.MAIN, protocol.Mode.PEEK_LOCK
SUBS = protocol.publish.TopicSubs("3", ("a", "b.c"), ("a",))
P = protocol


def _samples(entity: str = "q", p: int = 2) -> dict[str, tuple[Any, dict[str, Any], tuple[Any, ...], int]]:
    """Per script: a call its protocol module built, the fixed ARGV it should carry by header name,
    the arguments after them, and the further key sets (beyond the header's fixed ones)."""
    held = [_received(p, 5), _received(p, 9)]
    sweep = P.base.SWEEP_LIMIT
    lock = {"group": "m", "n": 2, "the lock nonce": "ab" * 8}
    tx_settle = ("complete", "m", 5, "ab" * 8, "", "")
    return {
        "send": (P.send.call(entity, p, 2, 1, [b"x", b"y"]), {"n": 2, "w": 1}, (b"x", b"y"), 0),
        "cancel_scheduled": (P.cancel_scheduled.call(entity, p, [4, 6]), {"n": 2}, (4, 6), 0),
        "receive": (
            P.receive.call(entity, p, M, L, 7, "nn"),
            {"group": "m", "mode": "L", "count": 7, "lock nonce": "nn", "sweep limit": sweep},
            (),
            0,
        ),
        "receive_deferred": (
            P.receive_deferred.call(entity, p, M, L, "nn", [3, 4], "s1"),
            {"group": "m", "mode": "L", "lock nonce": "nn", "n": 2},
            (3, 4, "s1"),
            0,
        ),
        "complete": (P.complete.call(entity, p, M, held), lock, (5, 9), 0),
        "abandon": (P.abandon.call(entity, p, M, held, "1"), lock, (5, 9, "1"), 0),
        "defer": (P.defer.call(entity, p, M, held), lock, (5, 9), 0),
        "dead_letter": (P.dead_letter.call(entity, p, M, held, "why", "what"), lock, (5, 9, "why", "what"), 0),
        "renew": (P.renew.call(entity, p, M, held), lock, (5, 9), 0),
        "peek": (
            P.peek.call(entity, p, M, 11, 3, "s1"),
            {"group": "m", "first seq": 11, "count": 3, "session id": "s1"},
            (),
            0,
        ),
        "stats": (P.stats.call(entity, p), {}, (), 0),
        "probe": (P.probe.call(entity, p, M), {"group": "m"}, (), 0),
        "publish": (
            P.publish.call(entity, p, SUBS, "src", ["", 0, 0, 0, 0, 0, b"x"]),
            {"subv": "3", "k": 2},
            ("a", "b.c", "src", 1, "", 0, 0, 0, 0, 0, b"x"),
            2,
        ),
        "cancel_topic_scheduled": (
            P.cancel_topic_scheduled.call(entity, p, SUBS, [8]),
            {"subv": "3", "k": 2},
            ("a", "b.c", 1, 8),
            2,
        ),
        "forward_out": (
            P.forward_out.call(entity, p),
            {
                "most messages to move": P.forward_out.OUTBOX_MOVE,
                "most entries to return": P.forward_out.OUTBOX_RETURN,
                "sweep limit": sweep,
            },
            (),
            0,
        ),
        "forward_in": (
            P.forward_in.call(entity, p, "src", ["", 0, 0, 1, 0, 4, b"x"]),
            {"source": "src", "n": 1},
            ("", 0, 0, 1, 0, 4, b"x"),
            0,
        ),
        "forward_ack": (
            P.forward_ack.call(entity, p, [(4, "ok", "", "", b"")]),
            {"n": 1},
            (4, "ok", "", "", b""),
            0,
        ),
        "idle": (
            P.idle.call(entity, "topic", p, ["a"], "check", 99),
            {"mode": "check", "cutoff ms": 99},
            (),
            1,
        ),
        "tx_commit": (
            P.tx_commit.call(entity, p, "tx1", 600, [tx_settle], [("", 0, 0, b"x")], [("other", b"y")]),
            {"transaction id": "tx1", "how long the commit marker is kept": 600, "n settlements": 1},
            (*tx_settle, 1, "", 0, 0, b"x", 1, "other", b"y"),
            0,
        ),
        "session_lock": (
            P.session_lock.call(entity, p, "s1", "nn"),
            {"session id": "s1", "lock nonce": "nn", "sweep limit": sweep},
            (),
            0,
        ),
        "session_receive": (
            P.session_receive.call(entity, p, "s1", L, 4, "nn"),
            {"session id": "s1", "mode": "L", "count": 4, "the session lock's nonce": "nn", "sweep limit": sweep},
            (),
            0,
        ),
        "session_renew": (
            P.session_renew.call(entity, p, "s1", "nn"),
            {"session id": "s1", "the session lock's nonce": "nn"},
            (),
            0,
        ),
        "session_release": (
            P.session_release.call(entity, p, "s1", "nn", [3]),
            {"session id": "s1", "the session lock's nonce": "nn", "n": 1},
            (3,),
            0,
        ),
        "session_state": (
            P.session_state.set_call(entity, p, "s1", "nn", b"st"),
            {"op": "set", "session id": "s1", "the session lock's nonce": "nn", "the state": b"st"},
            (),
            0,
        ),
        "session_list": (
            P.session_list.call(entity, p, "r[s1\x01", after_ms=5),
            {"cursor": "r[s1\x01", "state updated after": "5"},
            (),
            0,
        ),
        "dashboard_counts": (P.dashboard_counts.calls([(entity, p)], per_partition=True)[0], {}, (), 0),
    }


def _sample(name: str, entity: str, partition: int) -> ops.Call:
    c: ops.Call = _samples(entity, partition)[name][0]
    return c


def test_every_script_but_the_paired_lease_has_one_protocol_module() -> None:
    assert set(protocol.MODULES) == set(scripts.SCRIPT_NAMES) - PAIRED_SCRIPTS
    for name, module in protocol.MODULES.items():
        assert name == module.NAME
        assert module.__name__ == f"sbredis._core.protocol.{name}", "a protocol module is named after its script"
    assert set(_samples()) == set(protocol.MODULES), "every protocol module needs a sample call here"


@pytest.mark.parametrize("name", sorted(protocol.MODULES))
def test_protocol_module_argv_names_the_header_argv_in_order(name: str) -> None:
    documented = header_argv(LUA / f"{name}.lua")
    argv: tuple[str, ...] = protocol.MODULES[name].ARGV
    assert [i for i, _ in documented] == list(range(1, len(documented) + 1)), f"{name}: ARGV indexes with gaps"
    assert len(argv) == len(documented), f"{name}: the module names {argv}, the header {documented}"
    for declared, (i, text) in zip(argv, documented, strict=True):
        assert text.lower().startswith(declared.lower()), f"{name}: ARGV[{i}] is {text!r}, the module says {declared!r}"


@pytest.mark.parametrize("name", sorted(set(protocol.MODULES) - OWN_LAYOUT_SCRIPTS - {"publish"}))
def test_protocol_builder_passes_keys_and_argv_as_the_header_says(name: str) -> None:
    c, fixed, tail, further = _samples()[name]
    module = protocol.MODULES[name]
    assert c.script is scripts.load(name)
    sets, per_subscription = header_keysets(LUA / f"{name}.lua")
    assert further == 0 or per_subscription, f"{name}: only a per-subscription KEYS layout takes further key sets"
    if name in CFG_KEY_SCRIPTS:
        assert "(cfg) alone" in header_of(LUA / f"{name}.lua"), f"{name}: the KEYS line should say cfg alone"
        assert c.keys == keys.partition_keys("q", 2)[:1]
    else:
        assert len(c.keys) == (sets + further) * keys.NUM_PARTITION_KEYS
        assert c.keys[: keys.NUM_PARTITION_KEYS] == keys.partition_keys("q", 2)
    assert len({key_slot(k.encode()) for k in c.keys}) == 1
    assert set(fixed) == set(module.ARGV), f"{name}: the sample names {sorted(fixed)}"
    assert c.args[: len(module.ARGV)] == tuple(fixed[a] for a in module.ARGV), f"{name}: fixed ARGV out of order"
    assert c.args[len(module.ARGV) :] == tail


@pytest.mark.parametrize("per_partition", [True, False])
def test_dashboard_counts_passes_its_keys_as_the_header_says(per_partition: bool) -> None:
    header = header_of(LUA / "dashboard_counts.lua")
    listed = [int(n) for n in re.findall(r"\[(\d+)\]", header[header.index("KEYS:") : header.index("ARGV")])]
    module = protocol.dashboard_counts
    assert listed == list(range(1, module.KEYS_PER_PARTITION + 1))
    assert f"{module.KEYS_PER_PARTITION} more per further partition" in " ".join(header.split())
    names = keys.PARTITION_KEY_NAMES
    documented = ["cfg", "st", "log", "ready", "locked", "deferred", "sched", "d:log", "d:ready", "d:locked"]
    documented += ["d:deferred", "sr", "log", "sched", "d:log", "d:ready", "d:locked", "d:deferred"]
    assert [names[i] for i in (*module.OWNER_KEYS, *module.TRANSFER_KEYS)] == documented
    parts = [("q", 0), ("q", 1), ("t/Subscriptions/s", 3)]
    calls = module.calls(parts, per_partition, chunk=2)
    assert all(c.script is scripts.load("dashboard_counts") and c.args == () for c in calls)
    assert sum(map(module.partitions_of, calls)) == len(parts)
    flat = [k for c in calls for k in c.keys]
    assert flat == [k for path, p in parts for k in module.partition_keys(path, p)]
    assert module.partition_keys("q", 1)[0] == keys.entity_keys("q", 1)[0]
    assert module.partition_keys("q", 1)[-1] == keys.entity_keys("q" + keys.TRANSFER, 1)[16]
    if per_partition:
        assert all(len({key_slot(k.encode()) for k in c.keys}) == 1 for c in calls)


def test_no_module_outside_protocol_builds_a_script_call() -> None:
    """Script names, KEYS and ARGV are built in sbredis/_core/protocol only (ops.call and the
    siphon_lease call are sbredis/_core/paired.py's until paired namespaces move to their package)."""
    pattern = re.compile(r"\bscripts\.load\(|\bpartition_call\(|\bCall\(|\bops\.call\(")
    allowed = {
        ROOT / "sbredis" / "_core" / "paired.py",
        ROOT / "sbredis" / "paired" / "_core.py",  # paired namespaces
    }
    offenders = []
    for path in sorted((ROOT / "sbredis").rglob("*.py")):
        rel = path.relative_to(ROOT / "sbredis").as_posix()
        if rel.startswith("_core/protocol/") or path in allowed:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if pattern.search(code) and not code.lstrip().startswith(("def ", "class ")):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == [f"_core/ops.py:{_ops_call_line()}"] or offenders == [], offenders


def _ops_call_line() -> str:
    text = (ROOT / "sbredis" / "_core" / "ops.py").read_text().splitlines()
    n = next(i for i, ln in enumerate(text, 1) if "return partition_call(name, entity, partition, args)" in ln)
    return f"{n}: return partition_call(name, entity, partition, args)"
