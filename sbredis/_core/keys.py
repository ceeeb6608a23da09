"""Key names: the one place that builds them.

Every partition of an entity owns 24 keys under one Redis Cluster hash tag, ``{sb:<entity>:<p>}``,
so one script call touches one slot and partitions spread over the shards of a cluster. The
scripts receive all 24 in this order (``lua/includes/partition.lua`` names them), or the first
alone (complete, receive, send: ``cfg_key``), from which partition.lua names the others this way:

``cfg`` (hash)
    The entity's settings copied into the partition (status, lock_ms, max_dc, ttl_ms, dl_exp,
    dedup_ms, max_msg, max_size) and ``gen``, the entity's generation (fresh at each create, also in
    the registry record as ``_g``). Written by the administration client; scripts read it, so the
    settings in force are the server's, not a client's cache. Its absence means "no such entity";
    a ``gen`` other than the caller's means the caller's metadata predates a delete and create.
``st`` (hash)
    ``seq`` and ``dseq``: the last sequence numbers of the main queue and the dead-letter
    subqueue; ``size``: bytes stored; ``acc``: last use (server ms); ``cur``: the main queue's
    cursor (a non-session entity: messages past it are available with no ``ready`` entry, and
    receive reads them from the log; lua/includes/messages.lua's cursor_of); ``sl`` (partition 0 of a
    paired namespace's backlog queue ``x-servicebus-transfer/<i>`` only): the syphon lease,
    ``holder|until ms`` (lua/syphon_lease.lua).
``log`` (stream)
    One entry per message, id ``<seq>-0``, fields ``b`` (the encoded message, see codec.py),
    ``e`` (enqueued ms), ``x`` (expires ms, 0 never). Entries leave the log when the message is
    completed, received in receive-and-delete mode, expired, cancelled or dead-lettered.
``ready`` (sorted set)
    Available messages, score = seq: receive pops the lowest, and an abandoned message goes back
    to where its sequence number puts it (at or near the front). In the main queue of a
    non-session entity only those at or below ``st.cur`` (returned messages, due schedules):
    receive takes these first, then reads the log past the cursor. An expired message that a
    receive passed over (a dead-lettering entity's backlog, lua/includes/messages.lua's take)
    is at or below the cursor in ``exp`` alone, until the sweep dead-letters it.
``locked`` (sorted set)
    Locked messages, score = locked-until ms; the receive sweep releases the elapsed ones.
``lk`` (hash)
    seq -> lock record ``nonce|locked-until|home|expires|size|delivery count``; the nonce is what
    a lock token proves; locked-until is ``locked``'s score (both move together), so a settlement
    checks a lock with one read; home says where the message returns (ready or deferred). A
    session message's record has no locked-until (its lock is its session's) and ends with its
    session id (below). Records written before they carried locked-until
    (``nonce|home|expires|size|delivery count``) are read as session messages' are: their lock's
    end from ``locked`` (lua/includes/messages.lua's lock_record); no migration is needed.
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
``sr`` ... ``su``
    Sessions (used only when the entity's cfg says ``sess`` = 1, i.e. ``requires_session``; see
    ``lua/includes/sessions.lua``). session_id is the partition key, so a session lives in one
    partition. A session message's log entry adds ``s`` (its session id) and its lock record
    ends in ``|<session id>``. ``sr`` (sorted set, all scores 0, ordered by member) holds the
    available messages of every session as ``<session id> NUL <seq, 13 digits>``: one
    ZRANGEBYLEX gives one session's messages in sequence order (a session's messages never go
    to ``ready``). ``sa`` (sorted set) holds the sessions that have available messages and no
    lock holder, score = the seq that made them available: NEXT_AVAILABLE_SESSION takes the
    first. ``sl`` (hash) session id -> lock ``nonce|locked-until ms``; ``sx`` (sorted set)
    session id -> locked-until ms, so elapsed session locks are found without a scan. ``sk``
    (sorted set, members as ``sr``) the locked messages of each session: their message locks
    end with the session lock (renewing the session renews them; losing it releases them).
    ``ss`` (hash) session id -> session state, kept after the session's messages are gone.
    ``su`` (zset) session id -> when its state was last set (server ms), for
    ``list_*_sessions(state_updated_after=)``; an id leaves it when its state is cleared.

Key sets shaped like a partition (the same 24 names after another prefix, all under the owner's
hash tag, so one script can touch several of them in one slot):

``{sb:<topic>:<p>}:<name>`` (a topic partition)
    A topic keeps no messages of its own: ``cfg`` holds its settings plus ``subv`` (a counter
    bumped by every subscription change) and one field ``sub:<subscription>`` per subscription
    ('1' when it has forward_to), which a sender reads back from a publish reply when its copy is stale;
    ``st`` holds ``seq`` (the topic's sequence numbers), ``acc`` and the forwarding high-water
    marks below; ``dd`` duplicate detection; ``sched`` and ``lk`` map the topic sequence number
    of a scheduled message to its enqueue time and to the copies it made (for cancelling).
``{sb:<topic>:<p>}:s:<subscription>:<name>`` (partition p of a subscription)
    Every queue key, so the queue scripts (receive, settle, peek, defer, dead-letter) run on it
    unchanged. Its ``cfg`` adds ``dlf`` (dead-letter on filter evaluation errors) and the rules:
    ``rf:<rule>`` the compiled filter program, ``ra:<rule>`` the compiled action program.
``<owner prefix>:x:<name>`` (the transfer queue of a queue or subscription partition)
    Auto-forwarding's outbox and the transfer dead-letter subqueue. Its main group holds messages
    moved out of the owner on their way to the destination (log fields ``b``, ``x`` expires ms,
    ``h`` hop count, ``t`` destination, plus ``r``, ``rd`` and ``ds`` for dead-lettered messages
    being forwarded), in the order they were moved (``st.seq``); its dead-letter group is the
    transfer dead-letter subqueue (``ServiceBusSubQueue.TRANSFER_DEAD_LETTER``). ``st.inc`` names
    the outbox's incarnation for the destinations' high-water marks.

A destination partition's ``st`` hash keeps one field ``f:<source>:<p>:<incarnation>`` per source
partition that forwarded to it: the last outbox sequence number it accepted from there, so a
forward repeated after a crash is recognised and dropped (a drain sends each outbox prefix in
order, so the mark only grows).

Outside the partitions, ``sb:entities`` (hash) maps names to properties (JSON): queues, topics,
``<topic>/Subscriptions/<subscription>`` and ``<topic>/Subscriptions/<subscription>/Rules/<rule>``;
it is read when a sender or receiver starts and by the administration client, never per message.
In the same slot (hash tag ``{sb:entities}``): ``{sb:entities}:subs:<topic>`` (hash) names a
topic's subscriptions, ``{sb:entities}:rules:<topic>/Subscriptions/<subscription>`` (hash) a
subscription's rules, ``{sb:entities}:idle`` (sorted set) holds each entity with
``auto_delete_on_idle`` scored by the time it may next be idle (a candidate, checked against the
partitions' ``st.acc`` before anything is deleted), and ``{sb:entities}:forwarders`` (hash) maps
each queue or subscription that forwards to ``[forward_to, forward_dead_lettered_messages_to]``
(JSON), so finding what forwards into an entity reads that hash, not the registry.
``{sb:entities}:via`` (hash) has one field ``["<source>", "<destination>"]`` (JSON) per pair a
transaction sent through (docs/transactions.md): the source partition's transfer queue may hold
messages for that destination, so the receivers' pull and the maintenance drain it as they drain
forwarders. Written before the commit, once per client and pair.

A transaction writes no key of its own: its operations stay in the client until its one commit
call (``tx_commit``) on the home partition, whose sends to other entities are entries of that
partition's transfer queue (above), field ``t`` naming the destination and ``h`` 0.
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
    "sr",
    "sa",
    "sl",
    "sx",
    "sk",
    "ss",
    "su",
)
NUM_PARTITION_KEYS = len(PARTITION_KEY_NAMES)
# The keys of a subscription partition that a publish writes (publish.lua, includes/fansets.lua):
# a fan-out to 2,000 subscriptions passes these 10 each, not all 24 (Redis copies every key into
# the script call, a fixed cost per subscription whatever the batch).
FAN_KEY_NAMES = ("cfg", "st", "log", "sched", "exp", "d:log", "d:ready", "sr", "sa", "sl")
_FAN_INDEX = tuple(PARTITION_KEY_NAMES.index(n) for n in FAN_KEY_NAMES)
# The keys a publish's read-only check reads per subscription (includes/fansets.lua's checkset).
CHECK_KEY_NAMES = ("cfg", "st")


def partition_tag(entity: str, partition: int) -> str:
    """The hash tag shared by all keys of one partition."""
    return f"{{sb:{entity}:{partition}}}"


@lru_cache(maxsize=4096)
def partition_keys(entity: str, partition: int) -> tuple[str, ...]:
    """All keys of one partition, in the order every script receives them."""
    tag = partition_tag(entity, partition)
    return tuple(f"{tag}:{name}" for name in PARTITION_KEY_NAMES)


@lru_cache(maxsize=8192)
def cfg_key(path: str, partition: int) -> tuple[str]:
    """The one key complete, receive and send are called with: the partition's ``cfg``, from which
    ``lua/includes/partition.lua`` names the other 23 (its prefix followed by each name of
    PARTITION_KEY_NAMES, as partition_keys() does; tests/unit/test_lua_contract.py runs the Lua
    side against this module). One key to pack and send instead of 24, at every call of a
    one-message loop; the derived keys share its hash tag, so they are in its cluster slot."""
    return (entity_keys(path, partition)[0],)


def journal_key(topic: str, partition: int) -> str:
    """A topic partition's fan-out journal (a hash): the state of a publish split across script
    calls (publish.lua, docs/topics.md "Wide fan-outs"); it exists only while one is unfinished."""
    return f"{partition_tag(topic, partition)}:fj"


SUBSCRIPTIONS = "/Subscriptions/"  # <topic>/Subscriptions/<subscription>, as Service Bus paths
TRANSFER = "/$Transfer"  # <entity>/$Transfer: the transfer queue and transfer dead-letter subqueue
IDLE = "{sb:entities}:idle"
FORWARDERS = "{sb:entities}:forwarders"
VIA = "{sb:entities}:via"


def subscription_path(topic: str, subscription: str) -> str:
    return f"{topic}{SUBSCRIPTIONS}{subscription}"


def rule_path(topic: str, subscription: str, rule: str) -> str:
    return f"{topic}{SUBSCRIPTIONS}{subscription}/Rules/{rule}"


def subscriptions_index(topic: str) -> str:
    return f"{{sb:entities}}:subs:{topic}"


def rules_index(subscription_path_: str) -> str:
    return f"{{sb:entities}}:rules:{subscription_path_}"


@lru_cache(maxsize=4096)
def subscription_keys(topic: str, subscription: str, partition: int) -> tuple[str, ...]:
    """All keys of partition `partition` of a subscription, under the topic partition's hash tag."""
    prefix = f"{partition_tag(topic, partition)}:s:{subscription}"
    return tuple(f"{prefix}:{name}" for name in PARTITION_KEY_NAMES)


@lru_cache(maxsize=16384)  # a publish names every subscription of its topic partition (at most 2,000)
def subscription_fan_keys(topic: str, subscription: str, partition: int) -> tuple[str, ...]:
    """The FAN_KEY_NAMES keys of partition `partition` of a subscription (what publish writes)."""
    sk = subscription_keys(topic, subscription, partition)
    return tuple(sk[i] for i in _FAN_INDEX)


def transfer_keys(owner: tuple[str, ...]) -> tuple[str, ...]:
    """The transfer queue's keys of the partition whose keys are `owner`."""
    prefix = owner[0][: -len(":cfg")]
    return tuple(f"{prefix}:x:{name}" for name in PARTITION_KEY_NAMES)


@lru_cache(maxsize=8192)
def entity_keys(path: str, partition: int) -> tuple[str, ...]:
    """The 24 keys of a partition of an entity path: ``queue``, ``topic``,
    ``topic/Subscriptions/sub``, or any of them followed by ``/$Transfer`` (its transfer queue)."""
    if path.endswith(TRANSFER):
        return transfer_keys(entity_keys(path[: -len(TRANSFER)], partition))
    topic, sep, sub = path.partition(SUBSCRIPTIONS)
    if sep:
        return subscription_keys(topic, sub, partition)
    return partition_keys(path, partition)
