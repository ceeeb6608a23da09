# Generated from sbredis/aio/_renewer.py by scripts/unasync.py: edit the async source, not this.
"""The shell's AutoLockRenewer (sbredis/_concurrency.py has the asyncio and the thread variant)."""

from .._concurrency import SyncAutoLockRenewer as AutoLockRenewer

__all__ = ["AutoLockRenewer"]
