"""The import structure, read from the source with ``ast``: data flows one way (the house style).

- the domain (agent, context, transcript, providers, tools, workspace, artifacts, frozen, sessions) never imports
  the front ends (the edge, the handlers, ACP, the runtime) nor the services;
- the context pipeline (``server.context``) is pure: it imports only itself, ``protocol`` and standard modules
  that do no I/O;
- the services never import the edge, the handlers, ACP or the runtime;
- the handlers (``server.methods``) and the ACP front end never import the runtime: they get a ``Core``; only the
  entry points that build one (``server.edge.app``, ``server.acp.serve``) do;
- no module imports a module that imports it back, directly or around a circle, type-only imports included;
- ``server.config`` aggregates the parts' settings from above: nothing it aggregates (config.toml's tables, the
  ``[approvals]`` rules, tools, sandbox, hooks, MCP, ``secret_env``) reaches it back, and it reaches neither the
  agent, the live sessions nor anything above them; config.py and those rooms are in no folder-level cycle;
- the server never imports the client (``server.cli``);
- the client (``server.cli``) imports only ``protocol``, itself and a short list of pure helpers; only ``serve``
  leads into the server (``server.serve``);
- ``protocol`` imports nothing from ``server``;
- ``server.sessions`` sits above what it holds: agent, MCP and hooks define the slots of live state a
  ``Session`` handle holds and take the slot, so none of them imports ``server.sessions`` or the services; MCP and
  hooks, below the agent, never import it, nor each other (``server.emit`` and ``server.security.project_approval`` are what
  they share); the rooms (a folder under ``server/`` or a file in it) around ``server.sessions`` form no cycle;
- a service takes what it needs of the ``Core`` (its ``...Needs`` Protocol, ``server.services.needs``): no service
  module but ``core`` itself imports ``server.services.core``.

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
    "server.project.workspace",
    "server.artifacts",
    "server.project.frozen",
    "server.sessions",
    "server.mcp",
    "server.hooks",
    "server.emit",
    "server.security.project_approval",
)
EDGE = ("server.edge", "server.methods", "server.acp", "server.runtime")
SERVICES = ("server.services",)
# The entry points that build a Runtime for their connection (``server.edge.local``: exec's, in its process).
BUILDS_RUNTIME = {"server.edge.app", "server.acp.serve", "server.edge.local"}


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


def test_handlers_go_in_through_the_services_only():
    """One way into the core: a wire method's handler imports the wire types, the method table and the services
    (the ``Core`` it is handed among them), nothing below them, no sibling handler; and it never touches the store
    itself (``core.store``): what it reads or writes, a service does."""
    allowed = ("protocol", "server.methods.registry", "server.services", "server.errors")
    wrong = sorted(
        f"{m} imports {i}"
        for m, deps in WITH_TYPES.items()
        if _within(m, ("server.methods",)) and m not in ("server.methods", "server.methods.registry")
        for i in deps
        if not _within(i, allowed)
    )
    assert wrong == []
    reaching = sorted(
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "server" / "methods").glob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "core.store" in line
    )
    assert reaching == []


def test_acp_goes_in_through_the_services_not_below_them():
    """The ACP front end calls the services like the handlers: it never reaches into the agent, the sandbox, the
    store, checkpoints, MCP or hooks itself (the transcript's record types it may name)."""
    below = ("server.agent", "server.sandbox", "server.checkpoints", "server.mcp", "server.hooks")
    stores = ("server.transcript.store", "server.transcript.session_rows", "server.transcript.schema")
    assert _importing(("server.acp",), below + stores) == []
    reaching = sorted(
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "server" / "acp").glob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "core.store" in line or "core.mcp" in line
    )
    assert reaching == []


def test_handlers_and_acp_never_import_the_runtime():
    """They get a ``Core`` (``server.services.core``); the runtime is the composition root."""
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
    "server.context.messages": "a stored message in the pipeline's shape: the client reads a transcript as the store",
    "server.context.repair": "the tool-protocol repair (R-REP-1): eval's own views are sent valid, as the pipeline's",
    "server.recording": "a recording's plan: the client submits its user messages, the server replays its answers",
    "server.security.key_handover": "the provider keys handed to the server it starts over a pipe, never in its environment",
    "server.private_files": "the data folder's folders 0700 and files 0600, for the chat's log as for the server's",
}
# The ways into the server in process: ``threadline serve`` / ``threadline acp`` start it (server.cli.main),
# ``threadline exec`` runs it in its own process (server.cli.in_process; exec hides its keys first), and
# ``threadline eval`` asks the configured model its probes directly (views the server never builds, no
# tools), through ``server.probe_model`` alone, which builds the provider a session would get and stores nothing.
CLIENT_STARTS_SERVER = {
    "server.cli.main": {"server.serve"},
    "server.cli.exec": {"server.serve"},
    "server.cli.in_process": {"server.serve"},
    "server.cli.eval": {"server.probe_model"},
    # Before a daemon is started for it, the client reads the settings that daemon would read, so a broken
    # config.toml is one line from the command that asked, not a bridge restarting the daemon for a minute; and
    # exec --detach reads this shell's provider settings to hand them to the daemon (docs/DAEMON.md)
    "server.cli.daemon_start": {"server.config", "server.config_file", "server.edge.connect"},
    "server.cli.detach": {"server.config", "server.config_file"},
}


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


def _importing(importers: tuple[str, ...], imported: tuple[str, ...]) -> list[str]:
    """Who among ``importers`` imports any of ``imported``, type-only imports included."""
    return sorted(
        f"{m} imports {i}"
        for m, deps in WITH_TYPES.items()
        if _within(m, importers)
        for i in deps
        if _within(i, imported)
    )


def test_agent_mcp_and_hooks_never_import_the_sessions_or_the_services():
    """They define the slots a ``Session`` handle holds (``ViewState``, ``SentRequest``, ``McpChoices``,
    ``HookChoices``) and are handed the slot, so ``server.sessions`` sits above them."""
    below = ("server.agent", "server.mcp", "server.hooks", "server.emit", "server.security.project_approval")
    assert _importing(below, ("server.sessions", "server.services")) == []


def test_mcp_and_hooks_never_import_the_agent_nor_each_other():
    """They sit below the agent (which runs hooks and MCP tools in a turn); what both need, the ``Emitter`` and
    the project-file approval, is below them (``server.emit``, ``server.security.project_approval``)."""
    assert _importing(("server.mcp", "server.hooks"), ("server.agent",)) == []
    assert _importing(("server.mcp",), ("server.hooks",)) == []
    assert _importing(("server.hooks",), ("server.mcp",)) == []


def test_emit_and_the_project_approval_import_only_protocol_and_each_other():
    low = ("server.emit", "server.security.project_approval")
    assert _importing(low, ("server",)) == ["server.security.project_approval imports server.emit"]


def test_services_take_their_needs_not_the_core():
    """A service declares what it uses of the ``Core`` (a Protocol of ``server.services.needs``) and mypy
    holds it to that; only the front ends name the ``Core`` they hand over."""
    wrong = [
        line
        for line in _importing(("server.services",), ("server.services.core",))
        if not line.startswith("server.services.core ")
    ]
    assert wrong == []


def _room(module: str) -> str:
    """A folder under ``server/`` or a single file directly in it (``/work/tools/rooms.py``'s rooms)."""
    parts = module.split(".")
    if parts[0] != "server" or len(parts) == 1:
        return parts[0]
    return f"server.{parts[1]}"


ROOM_GRAPH: dict[str, set[str]] = {}
for _name, _deps in WITH_TYPES.items():
    ROOM_GRAPH.setdefault(_room(_name), set()).update(_room(d) for d in _deps if _room(d) != _room(_name))


def test_no_room_cycle_through_the_sessions():
    """Nothing ``server.sessions`` imports, room by room and type-only imports included, leads back to it."""
    rooms = ROOM_GRAPH
    reached, todo = set(), list(rooms["server.sessions"])
    while todo:
        room = todo.pop()
        if room not in reached:
            reached.add(room)
            todo.extend(rooms.get(room, ()))
    assert "server.sessions" not in reached


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


def _reached(graph: dict[str, set[str]], start: str) -> dict[str, str]:
    """Every node reachable from ``start`` (itself only if around a cycle), each with the node it was reached from."""
    came_from: dict[str, str] = {}
    todo = [start]
    while todo:
        node = todo.pop()
        for following in sorted(graph.get(node, ())):
            if following not in came_from:
                came_from[following] = node
                todo.append(following)
    return came_from


def _path(came_from: dict[str, str], start: str, end: str) -> str:
    steps = [end]
    while steps[-1] != start or len(steps) == 1:
        steps.append(came_from[steps[-1]])
    return " -> ".join(reversed(steps))


# What server.config aggregates or runs on: the parts keep their own settings types (``ToolSettings`` in tools/,
# ``SandboxSettings`` in sandbox/, ``HookSpec``, ``McpServerConfig``, ``ApprovalRules``) and config reads them.
CONFIG_PARTS = (
    "server.config_file",
    "server.security.approval_rules",
    "server.tools",
    "server.sandbox",
    "server.security.secret_env",
    "server.hooks",
    "server.mcp",
)


def test_nothing_config_aggregates_reaches_it_back():
    """A part is read and tested without the aggregate above it (type-only imports count)."""
    wrong = []
    for name in sorted(WITH_TYPES):
        came_from = _reached(WITH_TYPES, name)
        if _within(name, CONFIG_PARTS) and "server.config" in came_from:
            wrong.append(_path(came_from, name, "server.config"))
    assert wrong == []


def test_config_reaches_neither_the_agent_nor_the_sessions_nor_above():
    """The agent reads the settings (``server.agent.models``), so the settings never lead into it."""
    came_from = _reached(WITH_TYPES, "server.config")
    above = ("server.agent", "server.sessions", *SERVICES, *EDGE)
    assert sorted(_path(came_from, "server.config", m) for m in came_from if _within(m, above)) == []


# config.py and the rooms it gathers: a cycle between folders is modules that cannot be read apart even when no two
# modules import each other round a circle.
SETTINGS_ROOMS = (
    "server.config",
    "server.config_file",
    "server.security.approval_rules",
    "server.tools",
    "server.sandbox",
    "server.security.secret_env",
    "server.hooks",
    "server.mcp",
)


def test_config_and_the_rooms_it_gathers_are_in_no_folder_cycle():
    wrong = []
    for room in SETTINGS_ROOMS:
        came_from = _reached(ROOM_GRAPH, room)
        if room in came_from:
            wrong.append(_path(came_from, room, room))
    assert wrong == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_imports(name):
    importlib.import_module(name)


def test_a_turn_is_put_together_in_one_place():
    """``server.services.turn_factory`` is the one module that constructs ``agent.loop.Turn``: ``submitTurn``'s,
    ACP's and a subagent's turns are wired the same way."""
    builders = sorted(
        name
        for name, path in MODULES.items()
        if any(
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Turn"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    )
    assert builders == ["server.services.turn_factory"]


def test_a_running_turn_asks_its_session_through_its_ports_only():
    """``Turn`` holds objects and one ``TurnPorts``; no field is a callback into the layers above it (the tool
    runner is a strategy of the tools layer: a replay's hands back recorded results)."""
    from dataclasses import fields

    from server.agent.loop import Turn

    callbacks = [f.name for f in fields(Turn) if "Callable" in str(f.type) or "Awaitable" in str(f.type)]
    assert callbacks == []
    assert {f.name: str(f.type) for f in fields(Turn)}["ports"] == "TurnPorts"
    assert not _importing(("server.agent",), ("server.services", "server.sessions"))
