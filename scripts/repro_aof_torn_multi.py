"""Reproduce, with redis-py alone, how redis-server loses acknowledged writes after a torn transaction.

    python scripts/repro_aof_torn_multi.py [path/to/redis-server]

A SIGKILL that arrives while redis-server write()s its AOF buffer can leave the file cut at a page
boundary, in the middle of a MULTI/EXEC block (Lua scripts with several writes are logged as one).
With ``aof-load-truncated yes`` (the default) the next start truncates the file at the last
*complete command*, inside that block, instead of before its MULTI (which it does when the file
ends cleanly inside a block): the data in memory is right, but the file now ends with a MULTI
that has no EXEC. Everything the restarted server appends joins that transaction on the next load:

1. writes that are not followed by another EXEC are dropped, and the file truncated before them;
2. a later EXEC applies the torn block's commands (a script's half, atomicity broken) together
   with the next block, whose commands may then fail (an XADD ID taken by the torn half).

Steps (deterministic: the torn write is made by cutting the file where a SIGKILL cut it in
tests/reliability/test_redis_kills.py, inside the block's last command; see docs/reliability.md),
twice, on a fresh server each time (appendonly yes, appendfsync always):

  a. EVAL a script that sets k1 and XADDs 1-0 and 2-0 to stream s (logged as MULTI ... EXEC),
     SIGKILL, cut the AOF inside that block, restart: k1 and s are absent (right).
  b. c: SET ack 1 (acknowledged; WAITAOF 1 0 says it is on disk on Redis >= 7.2), SIGKILL,
     restart: ack is gone.
     d: EVAL a script that XADDs 1-0 "acked" and sets k2 (acknowledged), SIGKILL, restart: k1 is
     back (part of a script that was never applied) and s 1-0 holds "torn", not "acked".

Exit status 0 when the server loses the writes (the bug is present), 1 when it keeps them.
Fixed in Valkey by https://github.com/valkey-io/valkey/pull/4342 (truncate before the MULTI);
`redis-check-aof --fix` already truncates before the MULTI.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.redis_server import RedisServer, server_binary

TORN = (
    "redis.call('SET', 'k1', 'torn'); redis.call('XADD', 's', '1-0', 'v', 'torn'); "
    "redis.call('XADD', 's', '2-0', 'v', 'torn')"
)
LATER = "redis.call('XADD', 's', '1-0', 'v', 'acked'); redis.call('SET', 'k2', 'acked')"


def torn_then(binary: str, later: str) -> tuple[redis.Redis, RedisServer]:
    """A server whose AOF ends in a torn script (restarted once: its memory is right), then `later`
    run on it, acknowledged (appendfsync always, WAITAOF), and the server SIGKILLed and restarted."""
    server = RedisServer("--appendonly", "yes", "--appendfsync", "always", binary=binary).start()
    r = redis.Redis(port=server.port)
    r.eval(TORN, 0)
    server.kill()
    cut = server.tear_last_transaction()
    server.start()
    r = redis.Redis(port=server.port)
    assert r.get("k1") is None and r.xlen("s") == 0, "the torn script must not be applied"
    print(f"  AOF cut at byte {cut}, inside the script's MULTI block; restarted: k1 and s absent (right)")
    if later == "set":
        r.set("ack", 1)
    else:
        r.eval(LATER, 0)
    if tuple(int(x) for x in r.info("server")["redis_version"].split(".")[:2]) >= (7, 2):
        print(f"  {later}: acknowledged, WAITAOF 1 0 -> {r.execute_command('WAITAOF', 1, 0, 1000)}")
    server.kill()
    server.start()
    return redis.Redis(port=server.port), server


def main() -> int:
    binary = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SBREDIS_REDIS72_SERVER") or server_binary()
    print(f"redis-server at {binary}")
    lost = []
    r, server = torn_then(binary, "set")
    try:
        print(f"  version {r.info('server')['redis_version']}")
        ack = r.get("ack")
        print(f"  c. after a second restart: ack={ack!r}")
        if ack is None:
            lost.append("the acknowledged SET ack 1 is gone")
    finally:
        server.stop()
    r, server = torn_then(binary, "script")
    try:
        k1, k2 = r.get("k1"), r.get("k2")
        stream: Any = r.xrange("s")
        entries = [(i.decode(), f[b"v"].decode()) for i, f in stream]
        print(f"  d. after a second restart: k1={k1!r}, k2={k2!r}, s={entries}")
        if k1 is not None:
            lost.append("half of the torn script came back (k1)")
        if ("1-0", "acked") not in entries:
            lost.append("the acknowledged script's XADD 1-0 is gone (1-0 holds the torn script's entry)")
    finally:
        server.stop()
    print("BUG PRESENT: " + "; ".join(lost) if lost else "not reproduced: the server kept every acknowledged write")
    return 0 if lost else 1


if __name__ == "__main__":
    raise SystemExit(main())
