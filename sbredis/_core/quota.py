"""Partition quotas: how many messages a receive over several partitions asks each one for."""

from __future__ import annotations

from collections.abc import Sequence

# A partition asked for fewer messages than this costs more per message than it brings: each
# receive call pays a fixed cost (the entity's config, a bounded sweep, its reply), and so does the
# complete that follows per partition. So a receive of fewer than 2 * MIN_SHARE asks one partition
# (the one after the last asked, so calls rotate over the partitions), and a partition with fewer
# messages than its share is topped up from the others (probe, then take).
MIN_SHARE = 100


def split_quota(n: int, order: Sequence[int]) -> dict[int, int]:
    """Spread `n` messages over the first partitions in `order` (at least MIN_SHARE each where `n`
    allows), the first ones taking the remainder."""
    k = max(1, min(len(order), n // MIN_SHARE))
    order = order[:k]
    base, extra = divmod(n, k)
    out = {}
    for i, p in enumerate(order):
        q = base + (1 if i < extra else 0)
        if q:
            out[p] = q
    return out


def fill_quota(n: int, available: dict[int, int], order: Sequence[int]) -> dict[int, int]:
    """Ask partitions that have messages, in `order`, for up to `n` in all."""
    out = {}
    for p in order:
        if n <= 0:
            break
        take = min(n, available.get(p, 0))
        if take > 0:
            out[p] = take
            n -= take
    return out
