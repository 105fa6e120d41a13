"""The import structure, read from the source with ``ast``: data flows one way (the house style, issue 14).

- the domain (agent, context, transcript, providers, tools, workspace, artifacts, frozen) never imports the
  JSON-RPC edge (app, rpc, methods, runtime, tcp);
- no module imports a module that imports it back, directly or around a circle;
- the server never imports the client (``server.cli``);
- the client (``server.cli``) imports only ``protocol``, itself and a short list of pure helpers; only ``serve``
  leads into the server (``server.serve``);
- ``protocol`` imports nothing from ``server``.

Imports under ``if TYPE_CHECKING:`` are type-only and do not count; imports inside functions do.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOMAIN = (
    "server.agent",
    "server.context",
    "server.transcript",
    "server.providers",
    "server.tools",
    "server.workspace",
    "server.artifacts",
    "server.frozen",
)
EDGE = ("server.edge.app", "server.edge.rpc", "server.methods", "server.runtime", "server.edge.tcp")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for package in ("server", "protocol") for p in sorted((ROOT / package).rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path) -> set[str]:
    """The project modules ``name`` imports at run time (``from pkg import sub`` counts as ``pkg.sub``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit_node(other)
            else:
                visit_node(child)

    def visit_node(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_domain_never_imports_the_edge():
    wrong = sorted(
        f"{m} imports {i}" for m, deps in GRAPH.items() if _within(m, DOMAIN) for i in deps if _within(i, EDGE)
    )
    assert wrong == []


def test_the_server_never_imports_the_client():
    """``server.cli`` is the client side; only the entry points (``python -m server``) lead into it."""
    wrong = sorted(
        f"{m} imports {i}"
        for m, deps in GRAPH.items()
        if not _within(m, ("server.cli", "server.__main__"))
        for i in deps
        if _within(i, ("server.cli",))
    )
    assert wrong == []


# What the client may import besides ``protocol`` and ``server.cli``, and why. Each is pure: it imports only the
# standard library, ``protocol`` (the wire text) and others on this list, so the client shares the server's reading
# without its machinery.
CLIENT_PURE = {
    "server.context.tokens": "the token estimate (R-TOK-1): the client sizes messages exactly as the server does",
    "server.context.micro": "content_text, which server.recording reads a recording's messages with",
    "server.recording": "a recording's plan: the client submits its user messages, the server replays its answers",
}
# The one way into the server in process: ``threadline serve`` / ``threadline acp`` start it (server.cli.main).
CLIENT_STARTS_SERVER = {"server.cli.main": {"server.serve"}}


def test_the_client_imports_only_protocol_itself_and_pure_helpers():
    allowed = ("protocol", "server.cli", *CLIENT_PURE)
    wrong = sorted(
        f"{m} imports {i}"
        for m, deps in GRAPH.items()
        if _within(m, ("server.cli",))
        for i in deps
        if not _within(i, allowed) and i not in CLIENT_STARTS_SERVER.get(m, ())
    )
    assert wrong == []


def test_the_clients_pure_helpers_import_only_each_other():
    wrong = sorted(
        f"{m} imports {i}"
        for m in CLIENT_PURE
        for i in GRAPH[m]
        if i not in CLIENT_PURE and not _within(i, ("protocol",))
    )
    assert wrong == []


def test_protocol_imports_nothing_from_server():
    wrong = sorted(
        f"{m} imports {i}"
        for m, deps in GRAPH.items()
        if _within(m, ("protocol",))
        for i in deps
        if _within(i, ("server",))
    )
    assert wrong == []


def test_no_import_cycles():
    """Tarjan's strongly connected components: each must be a single module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            connect(v)
    assert cycles == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name):
    importlib.import_module(name)
