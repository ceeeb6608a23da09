"""Runs what the sans-IO core builds on a Redis connection: the only module that talks to Redis.

Scripts run by EVALSHA and are loaded on NOSCRIPT (a restarted or flushed server). redis-py's own
retries are off; script calls and reads are retried here by the client's RetryPolicy, which repeats
a call with the same arguments and only after a retryable error (see _core/retry.py).
Administrative MULTI/EXEC writes are not retried: their outcome after a lost reply is read back.
"""

from __future__ import annotations

import re
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError, WatchError
from tenacity import AsyncRetrying

from .._core.errors import map_error
from .._core.ops import Call
from .._core.retry import RetryPolicy, is_retryable
from ..exceptions import InvalidArgumentError, ServiceBusError

SCHEMES = ("redis", "rediss", "unix")


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^:@/]*):(.*)@")
_QUERY_SECRET = re.compile(r"(?i)([?&]password=)[^&]*")


def redact(url: str) -> str:
    """The URL without its password (for reprs, logs and error messages).

    Works on the text, so a password with unescaped '/', '#', '?' or '@' is hidden too.
    """
    url = _USERINFO.sub(r"\1\2:***@", url)
    return _QUERY_SECRET.sub(r"\1***", url)


class Transport:
    """One Redis connection pool and the error mapping around it."""

    def __init__(
        self, url: str, *, socket_timeout: float = 30.0, retry_policy: RetryPolicy | None = None, **options: Any
    ) -> None:
        if not isinstance(url, str):
            raise InvalidArgumentError("the connection string must be a str")
        self.url = redact(url)
        scheme = url.split("://", 1)[0] if "://" in url else ""
        if scheme not in SCHEMES:
            raise InvalidArgumentError(
                f"unsupported connection string scheme {scheme!r}; use redis://, rediss:// or unix://"
            )
        self.retry_policy = retry_policy or RetryPolicy()
        self._retry_options = self.retry_policy.tenacity_options()
        try:
            self.redis = Redis.from_url(
                url,
                decode_responses=False,
                socket_timeout=socket_timeout,
                socket_connect_timeout=min(socket_timeout, 10.0),
                retry=Retry(NoBackoff(), 0),
                **options,
            )
            self.redis.connection_pool.make_connection()  # checks the options now, connects later
        except TypeError as e:  # an unknown option: the message names it, not a secret
            raise InvalidArgumentError(f"invalid connection option for {self.url}: {e}") from None
        except ValueError:  # redis-py's message may quote parts of the URL: say nothing of it
            raise InvalidArgumentError(
                f"cannot parse the connection string {self.url} (percent-encode special characters "
                "in the user name and password)"
            ) from None

    def _retrying(self) -> AsyncRetrying:
        return AsyncRetrying(**self._retry_options)

    async def run(self, c: Call, entity: str = "") -> Any:
        """One script call, retried by the policy; raises ServiceBusError."""
        async for attempt in self._retrying():
            with attempt:
                return await self._run_once(c, entity)
        raise AssertionError("unreachable")  # tenacity re-raises the last error

    async def _run_once(self, c: Call, entity: str) -> Any:
        r = self.redis
        try:
            try:
                return await r.evalsha(c.script.sha, len(c.keys), *c.keys, *c.args)
            except NoScriptError:
                await r.script_load(c.script.source)
                return await r.evalsha(c.script.sha, len(c.keys), *c.keys, *c.args)
        except Exception as e:
            raise map_error(e, entity) from e

    async def run_many(self, calls: list[Call], entity: str = "") -> list[Any]:
        """Script calls in one round trip; each result is a reply or a ServiceBusError.

        Calls that failed with a retryable error are tried again (the others keep their result).
        """
        if len(calls) == 1:
            try:
                return [await self.run(calls[0], entity)]
            except ServiceBusError as e:
                return [e]
        results: list[Any] = [None] * len(calls)
        todo = list(range(len(calls)))
        try:
            async for attempt in self._retrying():
                with attempt:
                    await self._pipeline_once(calls, todo, results, entity)
                    todo = [i for i in todo if is_retryable(results[i])]
                    if todo:
                        raise results[todo[0]]
        except ServiceBusError:
            pass  # the last errors are in results
        return results

    async def _pipeline_once(self, calls: list[Call], todo: list[int], results: list[Any], entity: str) -> None:
        """Run calls[todo] pipelined, loading scripts the server lacks; fills results."""
        for attempt in range(2):
            try:
                async with self.redis.pipeline(transaction=False) as pipe:
                    for i in todo:
                        c = calls[i]
                        pipe.evalsha(c.script.sha, len(c.keys), *c.keys, *c.args)
                    replies = await pipe.execute(raise_on_error=False)
            except Exception as e:
                err = map_error(e, entity)
                for i in todo:
                    results[i] = err
                return
            missing = []
            for i, reply in zip(todo, replies, strict=True):
                if isinstance(reply, NoScriptError) and attempt == 0:
                    missing.append(i)
                elif isinstance(reply, Exception):
                    results[i] = map_error(reply, entity)
                else:
                    results[i] = reply
            if not missing:
                return
            try:
                for source in {calls[i].script.source for i in missing}:
                    await self.redis.script_load(source)
            except Exception as e:
                err = map_error(e, entity)
                for i in missing:
                    results[i] = err
                return
            todo = missing

    async def execute(self, *command: Any, entity: str = "") -> Any:
        """One plain Redis command (a read or an idempotent write), retried; raises ServiceBusError."""
        async for attempt in self._retrying():
            with attempt:
                try:
                    return await self.redis.execute_command(*command)
                except Exception as e:
                    raise map_error(e, entity) from e
        raise AssertionError("unreachable")

    async def transaction(self, commands: list[tuple[Any, ...]], entity: str = "") -> list[Any]:
        """Commands in MULTI/EXEC: all or none; raises ServiceBusError."""
        try:
            async with self.redis.pipeline(transaction=True) as pipe:
                for cmd in commands:
                    pipe.execute_command(*cmd)
                result: list[Any] = await pipe.execute()
                return result
        except Exception as e:
            raise map_error(e, entity) from e

    async def transaction_if_absent(
        self, key: str, field: str, commands: list[tuple[Any, ...]], entity: str = ""
    ) -> bool:
        """Run `commands` in MULTI/EXEC unless hash `key` has `field`; False when it has."""
        try:
            for _ in range(20):
                async with self.redis.pipeline(transaction=True) as pipe:
                    try:
                        await pipe.watch(key)
                        if await pipe.hexists(key, field):
                            return False
                        pipe.multi()
                        for cmd in commands:
                            pipe.execute_command(*cmd)
                        await pipe.execute()
                        return True
                    except WatchError:
                        continue  # another entity changed the registry meanwhile
            raise ServiceBusError("The registry kept changing; the entity was not created.", retryable=True)
        except ServiceBusError:
            raise
        except Exception as e:
            raise map_error(e, entity) from e

    async def close(self) -> None:
        await self.redis.aclose()

    def __repr__(self) -> str:
        return f"Transport({self.url})"
