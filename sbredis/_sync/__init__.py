"""The sync shell, generated from sbredis/aio by scripts/unasync.py."""
