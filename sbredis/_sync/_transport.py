# Generated from sbredis/aio/_transport.py by scripts/unasync.py: edit the async source, not this.
"""Runs what the sans-IO core builds on Redis: the only module that talks to Redis.

Scripts run by EVALSHA and are loaded on NOSCRIPT (a restarted, failed-over or flushed server).
redis-py's own retries are off; script calls and reads are retried here by the client's
RetryPolicy, which repeats a call with the same arguments and only after a retryable error (see
_core/retry.py).

A standalone URL (``redis://``, ``rediss://``, ``unix://``) uses one connection pool. A cluster URL
(``redis+cluster://``, ``rediss+cluster://``) keeps one pool per primary and the slot map
(_core/cluster.py): each call goes to the primary owning its partition, calls for one primary
share a pipeline, and the primaries are asked concurrently (asyncio; one after another in the sync
shell). A connection error or MOVED reply makes the next call read the slot map again.

Entity changes (create, update, delete) touch the registry and every partition: one MULTI/EXEC on
a standalone server; on a cluster, where no transaction spans slots, they first check that every
partition's primary answers, then write partitions before the registry entry that makes the entity
visible (create, update) or remove the registry entry first (delete), so a failure half-way leaves
either no visible entity or one a later create cleans up.
"""

from __future__ import annotations

import os
import ssl
import time
import uuid
from typing import Any

from redis import Redis
from redis.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError, WatchError
from redis.exceptions import TimeoutError as RedisTimeoutError
from tenacity import Retrying

from .._concurrency import sync_gather, sync_read_reply, sync_send_command
from .._core.cluster import CLUSTER_SCHEMES, ClusterUrl, SlotMap, parse_cluster_url
from .._core.connection import namespace_of
from .._core.connection import resolve as resolve_connection
from .._core.errors import PLAIN_SERVER_HINT, map_error
from .._core.keys import REGISTRY
from .._core.memory import memory_server
from .._core.packer import connection_options, fast_packing
from .._core.protocol import Call
from .._core.redact import redact
from .._core.reply_poll import ReplyPoll, reply_poll_limit
from .._core.retry import RetryPolicy, is_retryable
from .._core.sdk_keywords import client_options
from ..exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    OperationTimeoutError,
    ServiceBusConnectionError,
    ServiceBusError,
)

MAX_DURABILITY_TIMEOUT = 3600  # seconds (WAIT and WAITAOF take ms up to a bound)
MAX_SOCKET_TIMEOUT = 86_400  # seconds; NaN fails the bound check too (the socket layer takes neither)
SCHEMES = ("redis", "rediss", "unix", "memory", *CLUSTER_SCHEMES)
# A kept connection whose last reply was read less than this long ago (seconds) is used without
# the readiness check (_evalsha): in a loop of one-message calls the check (a poll of the socket,
# 2 µs CPU a call) would run between two replies a few dozen µs apart, too soon for an idle close;
# a connection lost within that moment fails as one lost during the call does (a retryable
# connection error), as it can between the check and the write too
FRESH = 0.001


def _memory_client(url: str) -> Any:
    """An in-process Redis for ``memory://<name>`` (_core/memory.py)."""
    server = memory_server(url)  # first: without fakeredis it raises the typed error saying what to install
    import fakeredis

    return fakeredis.FakeRedis(server=server, decode_responses=False)


def _ready(conn: Any) -> None:
    """The checks redis-py's pool makes before it hands out a connection: connected, and nothing
    waiting to be read (a connection the server closed while it was idle reads as end of file)."""
    if not conn.is_connected:
        conn.connect()
    try:
        stale = conn.can_read()
    except (RedisConnectionError, RedisTimeoutError, OSError):
        stale = True
    if stale:
        conn.disconnect()
        conn.connect()


def _in_doubt(e: ServiceBusError) -> bool:
    """An error after which the slot map may be stale (a node gone, a slot moved)."""
    return isinstance(e, ServiceBusConnectionError)


class Transport:
    """The connection pool(s) and the error mapping around them."""

    def __init__(
        self,
        url: str,
        *,
        socket_timeout: float = 30.0,
        retry_policy: RetryPolicy | None = None,
        wait_for_replicas: int = 0,
        wait_for_aof: bool = False,
        durability_timeout: float = 1.0,
        reply_poll_time: float | None = None,
        credential: Any = None,
        **options: Any,
    ) -> None:
        url, self.entity_path = resolve_connection(url, credential)
        self.url = redact(url)
        self.namespace = namespace_of(url)
        scheme = url.split("://", 1)[0] if "://" in url else ""
        self._tls = scheme.startswith("rediss")
        options = client_options(options, tls=self._tls)
        socket_timeout = options.pop("socket_timeout", socket_timeout)
        if scheme not in SCHEMES:
            raise InvalidArgumentError(
                f"unsupported connection string scheme {scheme!r}; use redis://, rediss://, unix://, "
                "redis+cluster://, rediss+cluster:// or memory://"
            )
        if isinstance(wait_for_replicas, bool) or not isinstance(wait_for_replicas, int) or wait_for_replicas < 0:
            raise InvalidArgumentError("wait_for_replicas must be a non-negative int")
        if not isinstance(wait_for_aof, bool):
            raise InvalidArgumentError("wait_for_aof must be a bool")
        if (
            isinstance(durability_timeout, bool)
            or not isinstance(durability_timeout, (int, float))
            or not 0 <= durability_timeout <= MAX_DURABILITY_TIMEOUT
        ):
            raise InvalidArgumentError(f"durability_timeout must be between 0 and {MAX_DURABILITY_TIMEOUT} seconds")
        self._reply_poll = ReplyPoll(reply_poll_limit(reply_poll_time))
        connect_timeout = options.get("socket_connect_timeout")
        for name, value in (("socket_timeout", socket_timeout), ("socket_connect_timeout", connect_timeout)):
            if (value is not None or name == "socket_timeout") and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_SOCKET_TIMEOUT
            ):
                raise InvalidArgumentError(f"{name} must be more than 0 and at most {MAX_SOCKET_TIMEOUT} seconds")
        self._wait = (wait_for_replicas, wait_for_aof, max(1, int(durability_timeout * 1000)))
        self.retry_policy = retry_policy or RetryPolicy()
        self._retry_options = self.retry_policy.tenacity_options()
        self._options: dict[str, Any] = {
            "decode_responses": False,
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": min(socket_timeout, 10.0),
            "retry": Retry(NoBackoff(), 0),
            **connection_options(Redis),  # the sync client's command packer (_core/packer.py)
            **options,
        }
        if scheme.startswith("rediss") and "ssl_check_hostname" not in options:
            # redis-py < 6 leaves host name checks off by default: sbredis turns them on (unless the
            # caller turned certificate checks off, which host name checks cannot go without)
            self._options["ssl_check_hostname"] = options.get("ssl_cert_reqs") not in ("none", ssl.CERT_NONE)
        self.cluster: ClusterUrl | None = None
        # single script calls go straight to a pooled connection (_evalsha), except on the
        # in-process server and with a credential provider (redis-py's per-command layers
        # re-authenticate a streaming one)
        self._direct = scheme != "memory" and self._options.get("credential_provider") is None
        # pool -> the connections _evalsha holds between calls, each with when its last reply was read
        self._kept: dict[Any, list[tuple[Any, float]]] = {}
        self._pid = os.getpid()
        self.closed = False
        self.faulted: ServiceBusError | None = None  # set by fault(): every call raises it (paired namespaces)
        self._nodes: dict[str, Redis] = {}
        self._slots: SlotMap | None = None
        try:
            if scheme in CLUSTER_SCHEMES:
                self.cluster = parse_cluster_url(url)
                self._options.update(username=self.cluster.username, password=self.cluster.password)
                host, port = self.cluster.seeds[0]
                self.redis = self._node(f"{host}:{port}", host, port)
            elif scheme == "memory":
                self.redis = _memory_client(url)
            else:
                self.redis = Redis.from_url(url, **self._options)
                fast_packing(self.redis)
            self.redis.connection_pool.make_connection()  # checks the options now, connects later
        except ServiceBusError:  # already typed and worded (memory:// without its extra)
            raise
        except TypeError as e:  # an unknown option: the message names it, not a secret
            raise InvalidArgumentError(f"invalid connection option for {self.url}: {e}") from None
        except ValueError:  # redis-py's message may quote parts of the URL: say nothing of it
            raise InvalidArgumentError(
                f"cannot parse the connection string {self.url} (percent-encode special characters "
                "in the user name and password)"
            ) from None

    # -- routing
    def _node(self, name: str, host: str, port: int) -> Redis:
        client = self._nodes.get(name)
        if client is None:
            assert self.cluster is not None
            client = Redis.from_url(self.cluster.node_url(host, port), **self._options)
            fast_packing(client)
            self._nodes[name] = client
        return client

    def _slot_map(self) -> SlotMap:
        if self._slots is not None:
            return self._slots
        assert self.cluster is not None
        candidates = dict.fromkeys(self._nodes)
        candidates.update(dict.fromkeys(f"{h}:{p}" for h, p in self.cluster.seeds))
        error: Exception | None = None
        for name in candidates:
            host, _, port = name.rpartition(":")
            try:
                reply = self._node(name, host, int(port)).execute_command("CLUSTER", "SLOTS")
            except Exception as e:
                error = e
                continue
            self._slots = SlotMap.from_reply(reply, host)
            return self._slots
        mapped = map_error(error) if error is not None else None
        if mapped is not None and not isinstance(mapped, ServiceBusConnectionError):
            raise mapped  # refused credentials, ACL: the same answer from every node
        raise ServiceBusConnectionError(
            f"No node of the cluster {self.url} answered: {mapped.message if mapped else ''}"
        )

    def _client_for(self, key: str) -> tuple[str, Redis]:
        """The node name and client for a key (the standalone server for a standalone URL)."""
        if self.cluster is None:
            return "", self.redis
        slots = self._slot_map()
        name = slots.node_for(key)
        if name is None:
            self._slots = None
            raise ServiceBusConnectionError("No primary of the cluster serves this partition now.")
        host, port = slots.primaries[name]
        return name, self._node(name, host, port)

    def _failed(self, e: Exception, entity: str, c: Call | None = None, node: str = "") -> ServiceBusError:
        err = map_error(e, entity)
        if self._tls and isinstance(err, OperationTimeoutError) and err.message.endswith("connecting to Redis."):
            err = OperationTimeoutError(err.message + PLAIN_SERVER_HINT, error=err.error)
        if _in_doubt(err):
            self._slots = None  # read the slot map again before the next call
            if c is not None:
                where = f" on {node}" if node else ""
                err = type(err)(f"{err.message} (partition {c.partition} of '{entity}'{where})", error=err.error)
        return err

    def node_names(self, keys: list[str]) -> list[str]:
        """The node ("host:port") serving each key, for runtime properties."""
        if self.cluster is None:
            kw = self.redis.connection_pool.connection_kwargs
            where = kw.get("path") or f"{kw.get('host', 'localhost')}:{kw.get('port', 6379)}"
            return [str(where)] * len(keys)
        slots = self._slot_map()
        return [slots.node_for(k) or "unassigned" for k in keys]

    # -- script calls
    def _retrying(self) -> Retrying:
        return Retrying(**self._retry_options)

    def fault(self, error: ServiceBusError) -> None:
        """Put the transport in the faulted state: every later call raises `error`."""
        self.faulted = error

    def run(self, c: Call, entity: str = "") -> Any:
        """One script call, retried by the policy; raises ServiceBusError."""
        if self.faulted is not None:
            raise self.faulted
        try:  # the first attempt outside tenacity, whose set-up costs more than a short call
            return self._run_once(c, entity)
        except ServiceBusError as e:
            if not is_retryable(e):
                raise
            failed = [e]

        def attempt() -> Any:  # the policy's attempts, the first being the one that failed above
            if failed:
                raise failed.pop()
            return self._run_once(c, entity)

        return self._retrying()(attempt)

    def _run_once(self, c: Call, entity: str) -> Any:
        if c.script.name == "send" and (self._wait[0] or self._wait[1]):
            results: list[Any] = [None]
            self._pipeline_once([c], [0], results, entity)
            if isinstance(results[0], ServiceBusError):
                raise results[0]
            return results[0]
        node = ""
        try:
            node, r = self._client_for(c.keys[0])
            try:
                return self._evalsha(r, c)
            except NoScriptError:
                r.script_load(c.script.source)
                return self._evalsha(r, c)
        except Exception as e:
            raise self._failed(e, entity, c, node) from e

    def _evalsha(self, r: Redis, c: Call) -> Any:
        """EVALSHA of `c` on a connection of `r`'s pool, below redis-py's per-command layers: its
        retry wrapper, observability hooks and response callbacks, and the pool's lock and
        bookkeeping at every call (the connection goes back to self._kept, not to the pool).
        Together about 20 µs CPU a call, as much as the rest of a round trip (docs/benchmarks.md
        "Loops against raw round trips"). sbredis retries by its own policy and EVALSHA has no
        response callback, so what is skipped does nothing here; a kept connection gets the checks
        the pool makes before it hands one out (_ready) unless its last reply was read under FRESH
        ago. The reply is polled for first, as _core/reply_poll.py decides. Errors are redis-py's;
        after any but an error reply the connection is dropped, as redis-py drops it."""
        if not self._direct:
            return r.evalsha(c.script.sha, len(c.keys), *c.keys, *c.argv)
        pool = r.connection_pool
        if self._pid != os.getpid():  # a forked child: the kept connections are the parent's
            self._kept, self._pid = {}, os.getpid()
        kept = self._kept.get(pool)
        if kept:
            conn, last = kept.pop()
            if time.monotonic() - last >= FRESH or not conn.is_connected:
                try:
                    _ready(conn)
                except BaseException:
                    pool.release(conn)
                    raise
        else:
            conn = pool.get_connection()
        kind = (c.script.name, len(c.args))
        sent = time.monotonic()
        poll = self._reply_poll.budget(kind, sent)
        try:
            sync_send_command(conn, "EVALSHA", c.script.sha, len(c.keys), *c.keys, *c.argv)
            reply = sync_read_reply(conn, poll)
        except ResponseError:
            # an error reply: the connection is fine
            self._kept.setdefault(pool, []).append((conn, time.monotonic()))
            raise
        except TimeoutError:  # sync_send_command's write past the socket timeout, as redis-py says it
            conn.disconnect()
            pool.release(conn)
            raise RedisTimeoutError("Timeout writing to socket") from None
        except BaseException:
            conn.disconnect()
            pool.release(conn)
            raise
        now = time.monotonic()
        self._reply_poll.took(kind, now - sent)
        self._kept.setdefault(pool, []).append((conn, now))
        return reply

    def run_many(self, calls: list[Call], entity: str = "", *, retry: str = "each") -> list[Any]:
        """Script calls in one round trip per node; each result is a reply or a ServiceBusError.

        retry="each": calls that failed with a retryable error are tried again (the others keep
        their result); "all": only when every call failed (a receive that reached some partitions
        serves from those rather than wait for the others); "none": never.
        """
        if self.faulted is not None:
            return [self.faulted] * len(calls)
        if len(calls) == 1 and retry != "none":
            try:
                return [self.run(calls[0], entity)]
            except ServiceBusError as e:
                return [e]
        results: list[Any] = [None] * len(calls)
        todo = list(range(len(calls)))
        if retry == "none":
            self._pipeline_once(calls, todo, results, entity)
            return results
        try:
            for attempt in self._retrying():
                with attempt:
                    self._pipeline_once(calls, todo, results, entity)
                    failed = [i for i in todo if is_retryable(results[i])]
                    if failed and (retry == "each" or len(failed) == len(calls)):
                        todo = failed
                        raise results[todo[0]]
        except ServiceBusError:
            pass  # the last errors are in results
        return results

    def _pipeline_once(self, calls: list[Call], todo: list[int], results: list[Any], entity: str) -> None:
        """Run calls[todo], one pipeline per node, the nodes concurrently; fills results."""
        groups: dict[str, list[int]] = {}
        clients: dict[str, Redis] = {}
        for i in todo:
            try:
                name, client = self._client_for(calls[i].keys[0])
            except ServiceBusError as e:
                results[i] = e
                continue
            groups.setdefault(name, []).append(i)
            clients[name] = client
        sync_gather(
            [self._node_pipeline(clients[n], n, calls, idx, results, entity) for n, idx in groups.items()]
        )

    def _node_pipeline(
        self, client: Redis, node: str, calls: list[Call], todo: list[int], results: list[Any], entity: str
    ) -> int:
        """Run calls[todo] pipelined on one node, loading scripts the node lacks; returns how many ran."""
        n = len(todo)
        for attempt in range(2):
            try:
                durable = any(calls[i].script.name == "send" for i in todo)
                with client.pipeline(transaction=False) as pipe:
                    for i in todo:
                        c = calls[i]
                        pipe.evalsha(c.script.sha, len(c.keys), *c.keys, *c.argv)
                    waits = self._durability_commands(pipe) if durable else 0
                    replies = pipe.execute(raise_on_error=False)
            except Exception as e:
                for i in todo:
                    results[i] = self._failed(e, entity, calls[i], node)
                return n
            if waits:
                shortfall = self._durability_shortfall(replies[len(replies) - waits :], node)
                replies = replies[: len(replies) - waits]
                if shortfall is not None:
                    replies = [shortfall if not isinstance(r, Exception) else r for r in replies]
            missing = []
            for i, reply in zip(todo, replies, strict=True):
                if isinstance(reply, NoScriptError) and attempt == 0:
                    missing.append(i)
                elif isinstance(reply, Exception):
                    results[i] = self._failed(reply, entity, calls[i], node)
                else:
                    results[i] = reply
            if not missing:
                return n
            try:
                for source in {calls[i].script.source for i in missing}:
                    client.script_load(source)
            except Exception as e:
                for i in missing:
                    results[i] = self._failed(e, entity, calls[i], node)
                return n
            todo = missing
        return n

    def _durability_commands(self, pipe: Any) -> int:
        """Queue WAIT / WAITAOF after the sends of a pipeline (same connection); returns how many."""
        replicas, aof, timeout_ms = self._wait
        if replicas:
            pipe.execute_command("WAIT", replicas, timeout_ms)
        if aof:
            pipe.execute_command("WAITAOF", 1, 0, timeout_ms)
        return int(bool(replicas)) + int(aof)

    def _durability_shortfall(self, replies: list[Any], node: str) -> ServiceBusError | None:
        """The error for sends that Redis stored but could not make as durable as asked."""
        replicas, aof, timeout_ms = self._wait
        where = f" on {node}" if node else ""
        if replicas:
            acked = replies.pop(0)
            if isinstance(acked, Exception):
                return self._failed(acked, "")
            if int(acked) < replicas:
                return ServiceBusConnectionError(
                    f"The send was stored on the primary{where} but only {int(acked)} of {replicas} replicas "
                    f"confirmed it within {timeout_ms} ms; it may be lost if the primary fails now (in doubt: "
                    "retry with the same message_id under duplicate detection)."
                )
        if aof:
            local = replies.pop(0)
            if isinstance(local, Exception):
                if "unknown command" in str(local).lower():
                    return InvalidOperationError("wait_for_aof needs Redis 7.2 or later (WAITAOF).")
                if "appendonly is disabled" in str(local):
                    # not a connection problem: retrying cannot help, and the send was stored
                    return InvalidOperationError(
                        f"wait_for_aof needs appendonly on the server{where}; the send was stored but not fsynced."
                    )
                return self._failed(local, "")
            if int(local[0]) < 1:
                return ServiceBusConnectionError(
                    f"The send was stored{where} but not fsynced to the append-only file within {timeout_ms} ms "
                    "(is appendonly on?); in doubt."
                )
        return None

    # -- plain commands
    def execute(self, *command: Any, entity: str = "") -> Any:
        """One plain Redis command (a read or an idempotent write), retried; raises ServiceBusError.

        On a cluster it goes to the node owning its first key (any node for commands without one).
        """
        if self.faulted is not None:
            raise self.faulted
        for attempt in self._retrying():
            with attempt:
                try:
                    if self.cluster is not None:
                        _, client = self._client_for(str(command[1]) if len(command) > 1 else REGISTRY)
                    else:
                        client = self.redis
                    return client.execute_command(*command)
                except Exception as e:
                    raise self._failed(e, entity) from e
        raise AssertionError("unreachable")

    def read_many(self, groups: list[list[tuple[Any, ...]]], entity: str = "") -> list[list[Any]]:
        """Groups of plain read commands, each group on the keys of one partition (one slot) and
        read atomically (MULTI/EXEC): every group's replies, in order. On a standalone server all
        groups go in one MULTI, one round trip; on a cluster one MULTI per group, in one pipeline
        per node. The replies are as Redis sends them, without redis-py's response callbacks (its
        XRANGE callback builds a dict per entry, more than the read itself costs a bulk reader).
        Retried by the policy; a command's error reply raises too.

        Raises:
            ServiceBusError: Redis failed or refused a command.
        """
        if self.faulted is not None:
            raise self.faulted
        for attempt in self._retrying():
            with attempt:
                try:
                    out: list[list[Any]] = [[] for _ in groups]
                    if self.cluster is None:
                        flat = self._exec(self.redis, [c for g in groups for c in g])
                        at = 0
                        for i, g in enumerate(groups):
                            out[i] = flat[at : at + len(g)]
                            at += len(g)
                        return out
                    by_node: dict[str, tuple[Redis, list[int]]] = {}
                    for i, g in enumerate(groups):
                        name, client = self._client_for(str(g[0][1]))
                        by_node.setdefault(name, (client, []))[1].append(i)
                    for client, idx in by_node.values():  # a MULTI per group, one pipeline per node
                        for i, replies in zip(
                            idx, self._exec_each(client, [groups[i] for i in idx]), strict=True
                        ):
                            out[i] = replies
                    return out
                except Exception as e:
                    raise self._failed(e, entity) from e
        raise AssertionError("unreachable")

    @staticmethod
    def _no_callbacks(pipe: Any) -> None:
        empty: Any = type(pipe.response_callbacks)  # this pipeline's own callbacks, none: the client's stay
        pipe.response_callbacks = empty({})

    def _exec(self, client: Redis, commands: list[tuple[Any, ...]]) -> list[Any]:
        with client.pipeline(transaction=True) as pipe:
            self._no_callbacks(pipe)
            for cmd in commands:
                pipe.execute_command(*cmd)
            return list(pipe.execute())

    def _exec_each(self, client: Redis, groups: list[list[tuple[Any, ...]]]) -> list[list[Any]]:
        """Each group in its own MULTI/EXEC (a cluster refuses one across slots), all in one
        pipeline: one round trip. Raises the first error reply, inside an EXEC's too."""
        with client.pipeline(transaction=False) as pipe:
            self._no_callbacks(pipe)
            for g in groups:
                pipe.execute_command("MULTI")
                for cmd in g:
                    pipe.execute_command(*cmd)
                pipe.execute_command("EXEC")
            replies = pipe.execute()
        out, at = [], 0
        for g in groups:
            at += len(g) + 2
            exec_reply = replies[at - 1]
            for r in exec_reply:
                if isinstance(r, Exception):
                    raise r
            out.append(list(exec_reply))
        return out

    def _multi(self, client: Redis, commands: list[tuple[Any, ...]], watch: str = "", field: str = "") -> bool:
        """Commands in MULTI/EXEC on one node; with `watch`, only if hash `watch` lacks `field`."""
        for _ in range(20):
            with client.pipeline(transaction=True) as pipe:
                try:
                    if watch:
                        pipe.watch(watch)
                        if pipe.hexists(watch, field):
                            return False
                        pipe.multi()
                    for cmd in commands:
                        pipe.execute_command(*cmd)
                    pipe.execute()
                    return True
                except WatchError:
                    continue  # another entity changed the registry meanwhile
        raise ServiceBusError("The registry kept changing; the entity was not changed.", retryable=True)

    def _by_partition(self, commands: list[tuple[Any, ...]]) -> list[tuple[Redis, list[tuple[Any, ...]]]]:
        """Partition commands grouped by their partition (each group is one slot, one node)."""
        groups: dict[str, list[tuple[Any, ...]]] = {}
        for cmd in commands:
            groups.setdefault(str(cmd[1]).split("}", 1)[0], []).append(cmd)
        out = []
        for cmds in groups.values():
            _, client = self._client_for(str(cmds[0][1]))
            out.append((client, cmds))
        return out

    def _check_reachable(self, groups: list[tuple[Redis, list[tuple[Any, ...]]]], entity: str) -> None:
        """PING every node an entity change needs, before writing anything."""
        _, registry = self._client_for(REGISTRY)
        nodes = {id(c): c for c in [registry, *(c for c, _ in groups)]}
        for client in nodes.values():
            try:
                client.ping()
            except Exception as e:
                kw = client.connection_pool.connection_kwargs
                raise ServiceBusConnectionError(
                    f"The node {kw.get('host')}:{kw.get('port')} that holds partitions of '{entity}' cannot be "
                    f"reached; nothing was changed: {map_error(e).message}"
                ) from None

    def change_entity(
        self, name: str, registry_cmd: tuple[Any, ...], partition_cmds: list[tuple[Any, ...]], *, create: bool = False
    ) -> bool:
        """Write an entity's registry entry and partitions all or none (see the module docstring).

        With `create`, nothing is written when the entity exists (returns False). A delete passes
        an HDEL as `registry_cmd`. Raises ServiceBusError.
        """
        if self.faulted is not None:
            raise self.faulted
        try:
            if self.cluster is None:
                if create:
                    return self._multi(self.redis, [registry_cmd, *partition_cmds], REGISTRY, name)
                self._multi(self.redis, [registry_cmd, *partition_cmds])
                return True
            groups = self._by_partition(partition_cmds)
            self._check_reachable(groups, name)
            _, registry = self._client_for(REGISTRY)
            lock = f"{{{REGISTRY}}}:changing:{name}"  # one change of an entity at a time (the registry's slot)
            token = uuid.uuid4().hex
            if not registry.set(lock, token, nx=True, px=30_000):
                raise ServiceBusError(f"Another change of '{name}' is in progress.", retryable=True)
            try:
                if create and registry.hexists(REGISTRY, name):
                    return False
                if registry_cmd[0] == "HDEL":  # delete: hide the entity first
                    registry.execute_command(*registry_cmd)
                sync_gather([self._multi(client, cmds) for client, cmds in groups])
                if registry_cmd[0] != "HDEL":  # create / update: show it once its partitions are written
                    registry.execute_command(*registry_cmd)
                return True
            finally:
                if registry.get(lock) == token.encode():
                    registry.delete(lock)
        except ServiceBusError:
            raise
        except Exception as e:
            raise self._failed(e, name) from e

    def close(self) -> None:
        self.closed = True
        kept, self._kept = self._kept, {}
        for pool, conns in kept.items():
            for conn, _ in conns:
                pool.release(conn)
        if self.cluster is None:
            self.redis.close()
        for client in self._nodes.values():
            client.close()

    def __repr__(self) -> str:
        return f"Transport({self.url})"
