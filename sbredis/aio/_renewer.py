"""The shell's AutoLockRenewer (sbredis/_concurrency.py has the asyncio and the thread variant)."""

from .._concurrency import AsyncAutoLockRenewer as AutoLockRenewer

__all__ = ["AutoLockRenewer"]
