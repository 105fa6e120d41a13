"""One launcher (B-PROC-1, B-SBX-1, B-SBX-5): every process the server starts begins in ``server.sandbox.start``.

Read from the source with ``ast``: no module in ``server/`` creates a process (``subprocess``, asyncio's
subprocess functions, ``anyio.open_process``, ``os.fork``/``exec*``/``spawn*``/``system``/``popen``, ``pty``,
``multiprocessing``) but the launcher and the few places below, each with the reason it is not a start of the
server's. And the starts the issue names go through it: tool commands (foreground and background share
``server.tools.spawn``), hooks, MCP stdio servers, ``threadline sandbox``, the search workers and the sandbox
probe.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "server"
LAUNCHER = "server/sandbox/start.py"

# Where a process may be created other than the launcher, and why.
ALLOWED = {
    LAUNCHER: "the launcher",
    "server/sandbox/contain.py": "the keeper (the PID namespace every start joins) and the forks in a starting child",
    "server/sandbox/launch.py": "the launcher program (a fresh interpreter) execs the command it was given",
    "server/patterns/forkserver.py": "inside the search worker (started by the launcher): one fork per job",
    "server/security/secret_env.py": "the server re-executes itself without the keys: no new process",
    "server/edge/connect.py": "`threadline connect`, a client's bridge, starts the daemon: the server itself",
}
CLIENT = "server/cli/"  # the client starts the server; it is not the server (tests/test_imports.py keeps it apart)

# module -> the functions of it that create (or replace) a process
CREATING = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "anyio": {"open_process", "run_process"},
    "os": {
        "fork",
        "forkpty",
        "system",
        "popen",
        "posix_spawn",
        "posix_spawnp",
        *(f"exec{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
        *(f"spawn{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
    },
    "pty": {"spawn", "fork"},
    "multiprocessing": {"Process", "Pool"},
}
ANY_ROOT = {"subprocess_exec", "subprocess_shell", "create_subprocess_exec", "create_subprocess_shell"}  # loop.…


def _dotted(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def creations(path: Path) -> list[str]:
    """``line: call`` for every call in ``path`` that creates a process."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    imported: dict[str, list[str]] = {}  # a local name -> the dotted name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                imported[alias.asname or alias.name] = [*node.module.split("."), alias.name]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imported[alias.asname or alias.name.split(".")[0]] = alias.name.split(".")[
                    : 1 if not alias.asname else None
                ]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or (dotted := _dotted(node.func)) is None:
            continue
        full = imported.get(dotted[0], [dotted[0]]) + dotted[1:]
        root, name = full[0], full[-1]
        if name in CREATING.get(root, ()) or name in ANY_ROOT:
            found.append(f"{node.lineno}: {'.'.join(full)}")
    return found


def test_no_process_is_created_in_server_but_by_the_launcher():
    wrong = []
    for path in sorted(SERVER.rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if where in ALLOWED or where.startswith(CLIENT):
            continue
        wrong += [f"{where}:{line}" for line in creations(path)]
    assert wrong == [], "start processes through server.sandbox.start (start / start_blocking)"


def test_the_allowed_places_still_create_processes():
    """An entry that no longer creates a process is dropped from the list, so the list stays the truth."""
    assert [where for where in ALLOWED if not creations(ROOT / where)] == []


def test_the_named_starts_go_through_the_launcher():
    users = {
        "server/tools/spawn.py": "start",  # run_command, foreground and background
        "server/hooks/run.py": "start",
        "server/mcp/stdio.py": "start",
        "server/serve.py": "start_blocking",  # threadline sandbox
        "server/patterns/run.py": "start",
        "server/patterns/pool.py": "start_blocking",
        "server/sandbox/runner.py": "start_blocking",  # the probe
    }
    missing = []
    for where, function in users.items():
        tree = ast.parse((ROOT / where).read_text(encoding="utf-8"))
        names = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "server.sandbox.start"
            for alias in node.names
        }
        called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        if function not in names or function not in called:
            missing.append(f"{where} does not call server.sandbox.start.{function}")
    assert missing == []


def test_the_check_sees_each_way_of_starting_a_process(tmp_path):
    """The checker itself: aliases, from-imports, a loop's method."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import subprocess as sp\nimport os\nfrom asyncio import create_subprocess_exec as cse\nimport anyio\n"
        "sp.Popen(['x'])\nos.execvp('x', ['x'])\ncse('x')\nanyio.open_process(['x'])\nloop.subprocess_exec(f)\n"
        "os.path.join('a')\nsp.PIPE\n"
    )
    assert [line.split(": ")[1] for line in creations(sample)] == [
        "subprocess.Popen",
        "os.execvp",
        "asyncio.create_subprocess_exec",
        "anyio.open_process",
        "loop.subprocess_exec",
    ]
