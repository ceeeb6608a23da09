"""AutoLockRenewer (sync and aio) refuses a max_lock_renewal_duration that is not a positive, finite
number of seconds, before it starts anything."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

import sbredis
import sbredis.aio
from sbredis.exceptions import InvalidArgumentError

BAD = [0, -1, math.inf, math.nan, True, "30"]


@pytest.mark.parametrize("value", BAD)
def test_sync_renewer_refuses(value: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="positive number of seconds"):
        sbredis.AutoLockRenewer(max_lock_renewal_duration=value)


@pytest.mark.parametrize("value", BAD)
def test_async_renewer_refuses(value: Any) -> None:
    async def make() -> None:
        sbredis.aio.AutoLockRenewer(max_lock_renewal_duration=value)

    with pytest.raises(InvalidArgumentError, match="positive number of seconds"):
        asyncio.run(make())


def test_a_large_finite_duration_is_accepted() -> None:
    sbredis.AutoLockRenewer(max_lock_renewal_duration=1e9).close()
