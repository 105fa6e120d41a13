"""Background processes: ``run_command {background: true}``, ``process_output`` and ``stop_process``.

A background process starts like any command (same sandbox, same scrubbed environment, its own process group,
registered with ``ProcessGroups`` so the server's exit kills it and a later server reaps it after a SIGKILL) and
returns at once with an id. What it prints is gathered as it comes; ``process_output`` hands over what arrived
since the last read (past 50 KB the loop keeps it as an artifact, like any result). The processes themselves are
the session's ``processes`` slot (``server.tools.running``).

The results' first lines are a contract the summary fold reads (B-SUM-11): they are written by the functions of
``server.context.processes``, which also parses them.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from datetime import UTC, datetime
from typing import Any

from server.context.processes import exited_line, running_line, started_line, stopped_line, unknown_line
from server.tools.base import Tool, ToolContext, ToolFailure, require_str, schema
from server.tools.running import BackgroundProcess, BackgroundProcesses
from server.tools.spawn import spawn_command


async def start_background(ctx: ToolContext, command: str, env: dict[str, str]) -> str:
    slot = ctx.background
    if slot is None:
        raise ToolFailure("background processes are not available here")
    cap = ctx.settings.max_background_processes
    if slot.running() >= cap:
        raise ToolFailure(
            f"this session already runs {cap} background processes (the limit, [tools] max_background_processes); "
            "stop one with stop_process first"
        )
    proc = await spawn_command(ctx, command, env)
    process_id = f"bg-{secrets.token_hex(3)}"
    started = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    slot.add(BackgroundProcess(process_id, proc.pid, command, started, proc))
    return (
        f"{started_line(process_id, proc.pid, command)}\n"
        "It runs on; read what it prints with process_output, end it with stop_process."
    )


def _known(ctx: ToolContext, args: dict[str, Any]) -> tuple[BackgroundProcesses, str]:
    process_id = require_str(args, "processId")
    if ctx.background is None or ctx.background.get(process_id) is None:
        raise ToolFailure(unknown_line(process_id))
    return ctx.background, process_id


def _header(process: BackgroundProcess) -> str:
    if process.status == "running":
        return running_line(process.id)
    if process.stopped:
        return stopped_line(process.id, process.exit_code)
    return exited_line(process.id, process.exit_code)


async def process_output(ctx: ToolContext, args: dict[str, Any]) -> str:
    slot, process_id = _known(ctx, args)
    process = slot.get(process_id)
    assert process is not None
    if process.status != "running" and process.reader is not None:
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.reader), 2.0)  # the last of its output
    text = process.take_output()
    return f"{_header(process)}\n{text}" if text else f"{_header(process)}\n(no new output)"


async def stop_process(ctx: ToolContext, args: dict[str, Any]) -> str:
    slot, process_id = _known(ctx, args)
    process = await slot.stop(process_id)
    assert process is not None
    text = process.take_output()
    return f"{_header(process)}\n{text}" if text else _header(process)


TOOLS = [
    Tool(
        "process_output",
        "What a background process (run_command with background: true) printed since the last read, and whether "
        "it still runs (its exit code once it ended).",
        schema(["processId"], processId={"type": "string"}),
        process_output,
    ),
    Tool(
        "stop_process",
        "End a background process (TERM, then KILL after a grace period) and return its last output.",
        schema(["processId"], processId={"type": "string"}),
        stop_process,
    ),
]
