"""What the OS sandbox adds to a command (B-SBX-1; the aim is under 20 ms), written to bench/SANDBOX.md.

    .venv/bin/python bench/sandbox_bench.py [--runs 60]

The real ``run_command`` tool runs ``true`` in a folder, alternately unconfined (sandbox off) and confined
(workspace-write: Landlock + user/mount/net namespaces, applied in the forked child before exec), so both see the
same load; the added time is the difference of the medians. For comparison, the same confinement through the
launcher (a fresh ``python -I -S`` that confines itself, then execs: what MCP servers use), and Landlock alone
without namespaces.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from server.config import Settings
from server.sandbox import landlock, linux
from server.sandbox.mode import command_sandbox
from server.sandbox.policy import SandboxSettings
from server.sandbox.runner import preexec, support, wrap
from server.tools.base import ToolContext
from server.tools.command import run_command

OUT = Path(__file__).with_name("SANDBOX.md")


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median": statistics.median(ordered), "p90": ordered[int(len(ordered) * 0.9) - 1]}


async def _tool_runs(folder: Path, home: Path, runs: int) -> tuple[list[float], list[float]]:
    settings = Settings(home=home)
    boxed = command_sandbox(settings.sandbox, "bench", folder, "workspace-write")
    tools = settings.tool_settings()
    plain: Any = ToolContext("bench", "turn", folder, tools, None, None)  # type: ignore[arg-type]
    confined: Any = ToolContext("bench", "turn", folder, tools, None, None, sandbox=boxed)  # type: ignore[arg-type]
    off, on = [], []
    for i in range(runs * 2 + 4):
        ctx = confined if i % 2 else plain
        start = time.perf_counter()
        await run_command(ctx, {"command": "true"})
        took = (time.perf_counter() - start) * 1000
        if i >= 4:  # the first few warm the page cache
            (on if i % 2 else off).append(took)
    return off, on


def _nothing() -> None:
    pass


def _process_runs(folder: Path, runs: int) -> dict[str, list[float]]:
    found = support()
    policy = command_sandbox(SandboxSettings(), "bench", folder, "workspace-write").policy
    ways = {
        "plain": lambda: subprocess.run(["true"], cwd=folder, check=True),
        # what preexec_fn itself costs: fork() instead of vfork(), and Python running in the child
        "empty preexec": lambda: subprocess.run(["true"], cwd=folder, preexec_fn=_nothing, check=True),
        "launcher": lambda: subprocess.run(wrap(policy, ["true"], found.namespaces), cwd=folder, check=True),
        "landlock only": lambda: subprocess.run(
            ["true"], cwd=folder, preexec_fn=preexec(policy, found.abi, False), check=True
        ),
    }
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(runs):
        for name, run in ways.items():
            start = time.perf_counter()
            run()
            samples[name].append((time.perf_counter() - start) * 1000)
    return samples


def _in_child(step) -> float:
    """Milliseconds ``step`` takes in a freshly forked child (the confinement it applies dies with the child)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        start = time.perf_counter()
        try:
            step()
        except OSError:
            os._exit(1)
        os.write(write, str((time.perf_counter() - start) * 1000).encode())
        os._exit(0)
    os.close(write)
    took = os.read(read, 64)
    os.close(read)
    os.waitpid(pid, 0)
    return float(took or "nan")


def _steps(folder: Path, runs: int) -> dict[str, float]:
    """The kernel's share, step by step, measured inside the child (what the mechanism adds is the rest)."""
    policy = command_sandbox(SandboxSettings(), "bench", folder, "workspace-write").policy
    abi = support().abi

    def namespaces() -> None:
        linux.enter_namespaces(False)

    def mounts() -> None:
        linux.enter_namespaces(False)
        for path in policy.read_only + policy.deny_read:
            if os.path.exists(path):
                linux.bind_read_only(path, path)

    def loopback() -> None:
        linux.enter_namespaces(False)
        linux.loopback_up()

    steps = {
        "user + mount + network namespaces": namespaces,
        "namespaces + read-only mounts": mounts,
        "namespaces + loopback up": loopback,
        "Landlock ruleset and restrict_self": lambda: landlock.restrict_self(
            abi, [(p, landlock.write_rights(abi)) for p in policy.writable], deny_tcp=False
        ),
        "everything (linux.enter)": lambda: linux.enter(policy, abi=abi),
    }
    return {name: statistics.median(_in_child(step) for _ in range(runs)) for name, step in steps.items()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    found = support()
    if not found.enforced:
        print(f"no sandbox here: {found.reason}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        folder, home = Path(tmp) / "ws", Path(tmp) / "home"
        folder.mkdir()
        home.mkdir()
        off, on = asyncio.run(_tool_runs(folder, home, args.runs))
        other = _process_runs(folder, args.runs)
        steps = _steps(folder, max(10, args.runs // 2))
    off_ms, on_ms = _ms(off), _ms(on)
    added = on_ms["median"] - off_ms["median"]
    rows = [
        ("run_command, sandbox off", off_ms, None),
        (f"run_command, workspace-write ({found.mechanism}, in the forked child)", on_ms, added),
        ("process: plain", _ms(other["plain"]), None),
        ("process: an empty preexec_fn (fork, not vfork; Python in the child)", _ms(other["empty preexec"]), None),
        ("process: launcher (python -I -S, then exec; MCP servers)", _ms(other["launcher"]), None),
        ("process: Landlock alone in the forked child (no namespaces)", _ms(other["landlock only"]), None),
    ]
    lines = [
        "# Sandbox overhead (B-SBX-1)",
        "",
        f"Generated by `.venv/bin/python bench/sandbox_bench.py --runs {args.runs}` on {platform.machine()}, "
        f"Linux {platform.release()}, Python {platform.python_version()}, Landlock ABI {found.abi}; "
        f"a shared 2-core machine (load average {os.getloadavg()[0]:.1f} at the end), so read the medians.",
        "",
        f"**Median added time per sandboxed command: {added:.1f} ms** (aim: under 20 ms; "
        f"{'met' if added < 20 else 'not met'}).",
        "",
        "| how `true` was run | median | p90 |",
        "| --- | ---: | ---: |",
        *(f"| {name} | {m['median']:.1f} ms | {m['p90']:.1f} ms |" for name, m, _ in rows),
        "",
        "Inside the child, step by step (median ms; each row starts from a fresh fork):",
        "",
        "| step | median |",
        "| --- | ---: |",
        *(f"| {name} | {ms:.2f} ms |" for name, ms in steps.items()),
        "",
        "The `process:` rows are whole `subprocess.run` calls. Most of what confinement adds is the mechanism, not"
        " the kernel's work: a `preexec_fn` makes Python fork (not vfork) and run in the child; the namespaces, the"
        " mounts and bringing up the loopback interface add the rest (the step table; the loopback is the largest"
        " kernel step, kept so that a test server inside a command can talk to itself). The load of the other"
        " engineers' test runs moves every figure: the same command measured 35.5 ms added under a load average"
        " of 7.5 (see the commit history of this file). The launcher costs a Python start-up per process, which is why `run_command` confines in the forked child and the launcher is kept for the"
        " processes a library starts (MCP stdio servers).",
        "",
    ]
    OUT.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
