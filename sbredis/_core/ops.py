"""The sans-IO operations' former home, kept so callers written before keep working.

The operations live in modules named for what they do: meta (EntityMeta), validation, send_plan,
quota, settlement, admin_commands, and protocol/ (one module per Lua script: calls and replies).
"""

from __future__ import annotations

from typing import Any

from .admin_commands import config_commands as config_commands
from .admin_commands import delete_commands as delete_commands
from .meta import EntityMeta as EntityMeta
from .protocol import peek, receive
from .protocol._held import LOCK_LOST as LOCK_LOST
from .protocol._held import lock_args as lock_args
from .protocol.base import SWEEP_LIMIT as SWEEP_LIMIT
from .protocol.base import Call as Call
from .protocol.base import Group as Group
from .protocol.base import Mode as Mode
from .protocol.base import group_of, mode_of, partition_call
from .quota import MIN_SHARE as MIN_SHARE
from .quota import fill_quota as fill_quota
from .quota import split_quota as split_quota
from .send_plan import entry_outcome as entry_outcome
from .send_plan import message_key as message_key
from .send_plan import pack as pack
from .send_plan import partition_of as partition_of
from .send_plan import plan_send as plan_send
from .send_plan import send_replies as send_replies
from .send_plan import send_result as send_result
from .send_plan import unkeyed as unkeyed
from .settlement import SETTLE_CHUNK as SETTLE_CHUNK
from .settlement import apply_settled as apply_settled
from .settlement import by_partition as by_partition
from .settlement import chunks as chunks
from .settlement import new_nonce as new_nonce
from .settlement import settle_groups as settle_groups
from .validation import LOCAL_MASK as LOCAL_MASK
from .validation import MAX_RECEIVE_COUNT as MAX_RECEIVE_COUNT
from .validation import as_messages as as_messages
from .validation import check_count as check_count
from .validation import check_session_ids as check_session_ids
from .validation import check_wait as check_wait
from .validation import sequence_numbers as sequence_numbers
from .validation import split_sequence_number as split_sequence_number

parse_received = receive.parse
parse_peeked = peek.parse


def call(name: str, entity: str, partition: int, *args: Any) -> Call:
    """Script `name` with `args` as given. Only sbredis/_core/paired.py calls this (the paired
    namespace code, moving to its own package); everything else builds calls in .protocol."""
    return partition_call(name, entity, partition, args)


group_code = group_of
mode_code = mode_of
