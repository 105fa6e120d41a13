"""The import structure, read from the source with ``ast``: data flows one way (the house style, issues 14, 29).

- the domain (agent, context, transcript, providers, tools, workspace, artifacts, frozen, sessions) never imports
  the front ends (the edge, the handlers, ACP, the runtime) nor the services;
- the context pipeline (``server.context``) is pure: it imports only itself, ``protocol`` and standard modules
  that do no I/O;
- the services never import the edge, the handlers, ACP or the runtime;
- the handlers (``server.methods``) and the ACP front end never import the runtime: they get a ``Core``; only the
  entry points that build one (``server.edge.app``, ``server.acp.serve``) do;
- no module imports a module that imports it back, directly or around a circle, type-only imports included;
- the server never imports the client (``server.cli``);
- the client (``server.cli``) imports only ``protocol``, itself and a short list of pure helpers; only ``serve``
  leads into the server (``server.serve``);
- ``protocol`` imports nothing from ``server``.

Imports inside functions count; so do imports under ``if TYPE_CHECKING:`` for the cycle rule (a type-only cycle
is still two modules that cannot be read apart). The layer rules read run-time imports.
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
    "server.sessions",
)
EDGE = ("server.edge", "server.methods", "server.acp", "server.runtime")
SERVICES = ("server.services",)
# The two entry points that build a Runtime for their connection.
BUILDS_RUNTIME = {"server.edge.app", "server.acp.serve"}


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


def _imports(name: str, path: Path, type_only: bool = False) -> set[str]:
    """The project modules ``name`` imports at run time (``from pkg import sub`` counts as ``pkg.sub``); with
    ``type_only``, those under ``if TYPE_CHECKING:`` too."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child) and not type_only:
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
WITH_TYPES = {name: _imports(name, path, type_only=True) for name, path in MODULES.items()}


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_domain_never_imports_the_edge_or_the_services():
    wrong = sorted(
        f"{m} imports {i}"
        for m, deps in GRAPH.items()
        if _within(m, DOMAIN)
        for i in deps
        if _within(i, EDGE + SERVICES)
    )
    assert wrong == []


# The standard library the pipeline may use: none of it reads or writes anything (no files, clock, processes,
# sockets or randomness), so a view is a function of the messages alone and testable on any transcript.
PURE_STDLIB = {"__future__", "array", "bisect", "collections", "dataclasses", "json", "math", "re", "typing"}


def test_the_context_pipeline_is_pure():
    """``server.context`` imports only itself, ``protocol`` (the wire text) and I/O-free standard modules."""
    wrong = []
    for name, path in MODULES.items():
        if not _within(name, ("server.context",)):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                found = [node.module or ""]
            else:
                continue
            wrong += [
                f"{name} imports {i}"
                for i in found
                if i.split(".")[0] not in PURE_STDLIB and not _within(i, ("server.context", "protocol"))
            ]
    assert sorted(wrong) == []


def test_the_services_never_import_the_edge():
    wrong = sorted(
        f"{m} imports {i}" for m, deps in GRAPH.items() if _within(m, SERVICES) for i in deps if _within(i, EDGE)
    )
    assert wrong == []


def test_handlers_and_acp_never_import_the_runtime():
    """Issue 29: they get a ``Core`` (``server.services.core``); the runtime is the composition root."""
    wrong = sorted(
        f"{m} imports {i}"
        for m, deps in WITH_TYPES.items()
        if _within(m, ("server.methods", "server.acp", "server.services")) and m not in BUILDS_RUNTIME
        for i in deps
        if _within(i, ("server.runtime",))
    )
    assert wrong == []


def test_only_the_entry_points_build_a_runtime():
    importers = {m for m, deps in WITH_TYPES.items() if "server.runtime" in deps}
    assert importers == BUILDS_RUNTIME


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
    "server.context.failures": "what counts as a failure (B-SUM-10), which server.context.micro keeps by",
    "server.context.repair": "the tool-protocol repair (R-REP-1): eval's own views are sent valid, as the pipeline's",
    "server.recording": "a recording's plan: the client submits its user messages, the server replays its answers",
    "server.key_handover": "the provider keys handed to the server it starts over a pipe, never in its environment",
}
# The ways into the server in process: ``threadline serve`` / ``threadline acp`` start it (server.cli.main), and
# ``threadline eval`` asks the configured model its probes directly (issue 37: views the server never builds, no
# tools), through ``server.probe_model`` alone, which builds the provider a session would get and stores nothing.
CLIENT_STARTS_SERVER = {"server.cli.main": {"server.serve"}, "server.cli.eval": {"server.probe_model"}}


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
    """Tarjan's strongly connected components: each must be a single module (type-only imports count)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(WITH_TYPES[v]):
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

    for v in sorted(WITH_TYPES):
        if v not in index:
            connect(v)
    assert cycles == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name):
    importlib.import_module(name)
