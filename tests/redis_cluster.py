"""A local Redis Cluster for the tests, without Docker: redis-server processes with cluster mode on
loopback ports, slots assigned with CLUSTER ADDSLOTS, joined with CLUSTER MEET, replicas attached
with CLUSTER REPLICATE. `kill(i)` SIGKILLs a node; `restart(i)` brings it back with its data."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import redis

from tests.redis_server import RedisServer

SLOTS = 16384


def _cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + 10000 > 65535:
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


class ClusterNode(RedisServer):
    def __init__(self, *extra: str) -> None:
        super().__init__(
            "--cluster-enabled",
            "yes",
            "--cluster-node-timeout",
            "1000",
            "--cluster-require-full-coverage",
            "no",  # the other primaries keep serving while one is down
            "--cluster-replica-validity-factor",
            "0",
            *extra,
        )
        self.port = _cluster_port()
        self.extra += ["--cluster-config-file", f"{self.dir}/nodes.conf"]
        self.password: str | None = None

    def _fresh_port(self) -> int:
        # a failed first start may have written the old port into the node's cluster config
        Path(self.dir, "nodes.conf").unlink(missing_ok=True)
        return _cluster_port()

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5, password=self.password)


class RedisCluster:
    def __init__(self, primaries: int = 3, replicas_per_primary: int = 0, *extra: str) -> None:
        self.primaries = [ClusterNode(*extra) for _ in range(primaries)]
        self.replicas = [ClusterNode(*extra) for _ in range(primaries * replicas_per_primary)]

    @property
    def nodes(self) -> list[ClusterNode]:
        return self.primaries + self.replicas

    @property
    def url(self) -> str:
        """A cluster URL naming every primary as a seed."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.primaries)

    def start(self) -> RedisCluster:
        for n in self.nodes:
            n.start()
        step = SLOTS // len(self.primaries)
        for i, n in enumerate(self.primaries):
            end = SLOTS if i == len(self.primaries) - 1 else (i + 1) * step
            n.client().execute_command("CLUSTER", "ADDSLOTS", *range(i * step, end))
        first = self.primaries[0].client()
        for n in self.nodes[1:]:
            first.execute_command("CLUSTER", "MEET", "127.0.0.1", n.port)
        self._wait(
            lambda: all(
                len(n.client().execute_command("CLUSTER", "NODES").splitlines()) == len(self.nodes) for n in self.nodes
            ),
            "nodes to meet",
        )
        per = len(self.replicas) // len(self.primaries) if self.primaries else 0
        for i, r in enumerate(self.replicas):
            primary_id = self.primaries[i // per].client().execute_command("CLUSTER", "MYID")
            r.client().execute_command("CLUSTER", "REPLICATE", primary_id)
        self.wait_ok()
        return self

    def wait_ok(self, timeout: float = 20) -> None:
        def ok() -> bool:
            for n in self.nodes:
                if n.proc is None or n.proc.poll() is not None:
                    continue
                info = n.client().execute_command("CLUSTER", "INFO")
                text = info.decode() if isinstance(info, bytes) else str(info)
                if "cluster_state:ok" not in text:
                    return False
            return True

        self._wait(ok, "cluster_state:ok", timeout)

    @staticmethod
    def _wait(check: object, what: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if check():  # type: ignore[operator]
                    return
            except (redis.RedisError, OSError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the test cluster did not reach {what} within {timeout}s")

    def kill(self, i: int) -> ClusterNode:
        node = self.primaries[i]
        node.kill()
        return node

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()
