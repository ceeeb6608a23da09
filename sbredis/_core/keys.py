"""Key names: the one place that builds them.

Every partition of an entity owns 17 keys under one Redis Cluster hash tag, ``{sb:<entity>:<p>}``,
so one script call touches one slot and partitions spread over the shards of a cluster. The
scripts receive all 17 in this order (``lua/includes/partition.lua`` names them):

``cfg`` (hash)
    The entity's settings copied into the partition (status, lock_ms, max_dc, ttl_ms, dl_exp,
    dedup_ms, max_msg, max_size). Written by the administration client; scripts read it, so the
    settings in force are the server's, not a client's cache. Its absence means "no such entity".
``st`` (hash)
    ``seq`` and ``dseq``: the last sequence numbers of the main queue and the dead-letter
    subqueue; ``size``: bytes stored; ``acc``: last use (server ms).
``log`` (stream)
    One entry per message, id ``<seq>-0``, fields ``b`` (the encoded message, see codec.py),
    ``e`` (enqueued ms), ``x`` (expires ms, 0 never). Entries leave the log when the message is
    completed, received in receive-and-delete mode, expired, cancelled or dead-lettered.
``ready`` (sorted set)
    Available messages, score = seq: receive pops the lowest, and an abandoned message goes back
    to where its sequence number puts it (at or near the front).
``locked`` (sorted set)
    Locked messages, score = locked-until ms; the receive sweep releases the elapsed ones.
``lk`` (hash)
    seq -> lock record ``nonce|home|expires|size|delivery count``; the nonce is what a lock token
    proves; home says where the message returns (ready or deferred).
``dc`` (hash)
    seq -> delivery count of a message that is not locked now (absent: never delivered). A locked
    message's count is in its lock record and written back only when the lock ends without a
    completion, so the common receive-complete path never touches this hash.
``deferred`` (sorted set)
    Deferred messages, score = seq.
``sched`` (sorted set)
    Scheduled messages, score = their enqueue time; they are in the log but not yet ready.
``exp`` (sorted set)
    Available and deferred messages with a TTL, score = expires ms, so expiry needs no scan.
``dd`` (sorted set)
    Duplicate detection: message_id -> end of its window.
``d:log`` ... ``d:deferred``
    The dead-letter subqueue, shaped like the main queue (log, ready, locked, lk, dc, deferred);
    its entries add ``r`` (reason), ``rd`` (description) and ``os`` (the main-queue seq).

Outside the partitions, ``sb:entities`` (hash) maps entity names to their properties (JSON); it
is read when a sender or receiver starts and by the administration client, never per message.
"""

from __future__ import annotations

from functools import lru_cache

REGISTRY = "sb:entities"

PARTITION_KEY_NAMES = (
    "cfg",
    "st",
    "log",
    "ready",
    "locked",
    "lk",
    "dc",
    "deferred",
    "sched",
    "exp",
    "dd",
    "d:log",
    "d:ready",
    "d:locked",
    "d:lk",
    "d:dc",
    "d:deferred",
)
NUM_PARTITION_KEYS = len(PARTITION_KEY_NAMES)


def partition_tag(entity: str, partition: int) -> str:
    """The hash tag shared by all keys of one partition."""
    return f"{{sb:{entity}:{partition}}}"


@lru_cache(maxsize=4096)
def partition_keys(entity: str, partition: int) -> tuple[str, ...]:
    """All keys of one partition, in the order every script receives them."""
    tag = partition_tag(entity, partition)
    return tuple(f"{tag}:{name}" for name in PARTITION_KEY_NAMES)
