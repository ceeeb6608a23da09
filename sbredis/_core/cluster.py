"""Redis Cluster without I/O: connection strings, and which primary owns which partition.

``redis+cluster://[user:password@]host:port[,host:port...][?options]`` (``rediss+cluster://`` for
TLS) names seed nodes; the slot map comes from ``CLUSTER SLOTS`` on any reachable one and is read
again when a node is gone or a slot moved (MOVED/ASK). Every script call goes to the primary that
owns its partition's hash tag; calls for one primary share one pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote

from redis.crc import key_slot

from ..exceptions import InvalidArgumentError

CLUSTER_SCHEMES = {"redis+cluster": False, "rediss+cluster": True}
SLOTS = 16384


@dataclass(frozen=True)
class ClusterUrl:
    seeds: tuple[tuple[str, int], ...]
    tls: bool
    username: str | None
    password: str | None = field(repr=False)  # never in a repr (nor the query, which may carry one)
    options: dict[str, str] = field(default_factory=dict, repr=False)
    query: str = field(default="", repr=False)

    def node_url(self, host: str, port: int) -> str:
        """A standalone URL for one node with the options of the cluster URL (credentials are
        passed separately)."""
        return f"{'rediss' if self.tls else 'redis'}://{host}:{port}/0" + (f"?{self.query}" if self.query else "")


def parse_cluster_url(url: str) -> ClusterUrl:
    """Split a cluster connection string; raises InvalidArgumentError (without echoing secrets)."""
    scheme, rest = url.split("://", 1)
    tls = CLUSTER_SCHEMES[scheme]
    netloc, _, tail = rest.partition("/")
    path, _, query = tail.partition("?")
    if "?" in netloc:
        netloc, _, query = netloc.partition("?")
    username = password = None
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        user, sep, pw = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(pw) if sep else None
    seeds = []
    for part in netloc.split(","):
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise InvalidArgumentError("a cluster connection string lists nodes as host:port[,host:port...]")
        seeds.append((host.strip("[]"), int(port)))
    if path not in ("", "0"):
        raise InvalidArgumentError("Redis Cluster has only database 0")
    options = dict(parse_qsl(query)) if query else {}
    return ClusterUrl(tuple(seeds), tls, username, password, options, query)


class SlotMap:
    """Slot -> primary ("host:port"), from a CLUSTER SLOTS reply."""

    def __init__(self) -> None:
        self.owner: list[str | None] = [None] * SLOTS
        self.primaries: dict[str, tuple[str, int]] = {}

    @classmethod
    def from_reply(cls, reply: list[Any], asked_host: str) -> SlotMap:
        m = cls()
        for entry in reply:
            start, end, primary = int(entry[0]), int(entry[1]), entry[2]
            host = primary[0].decode() if isinstance(primary[0], bytes) else str(primary[0])
            if not host or host == "?":  # the node does not know its own address: use the one we asked
                host = asked_host
            name = f"{host}:{int(primary[1])}"
            m.primaries[name] = (host, int(primary[1]))
            for slot in range(start, end + 1):
                m.owner[slot] = name
        return m

    def node_for(self, key: str) -> str | None:
        return self.owner[key_slot(key.encode())]

    @property
    def complete(self) -> bool:
        return all(o is not None for o in self.owner)
