"""run_command: a shell command in the session folder, with a timeout, a scrubbed environment and a kill switch.

Unless the session's sandbox is off, the command and everything it starts run confined (B-SBX-1,
``server.sandbox``): writes only in the folder, its private temp folder (``TMPDIR``) and ``writable_roots``, no
network. ``escalate: true`` with a ``reason`` runs it outside, after the user allowed it (B-SBX-3); a confined
command that failed on what looks like a denial says so in its result, so the model can ask to escalate.

The command runs in its own process group so a timeout or a cancelled turn kills everything it started. Provider
keys never reach it: THREADLINE_* variables, well-known provider key variables and any variable whose value is a
configured secret are removed from its environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
from dataclasses import replace
from typing import Any

from server.sandbox.denials import denial_note
from server.security.secret_env import KEY_VARS
from server.tools.background import start_background
from server.tools.base import Tool, ToolContext, ToolDenied, ToolFailure, require_str, schema
from server.tools.spawn import spawn_command

PROVIDER_KEY_VARS = set(KEY_VARS)

# Destructive system commands: refused whatever the approval policy says. Words that are commands only in
# command position (``shutdown``, ``mkfs``...) are matched there, so ``git commit -m "fix shutdown"`` still runs.
_AT_COMMAND = r"(?:^|[;&|(`\n]|\$\()\s*(?:sudo\s+(?:-\S+\s+)*)?"
FORBIDDEN = [
    (
        re.compile(r"\brm\s+(-[a-zA-Z]*[rf][a-zA-Z]*\s+)+(--no-preserve-root\s+)?(/|/\*|~|~/|\$HOME)(\s|$|;)"),
        "recursive removal of / or the home folder",
    ),
    (re.compile(_AT_COMMAND + r"mkfs(\.\w+)?\b"), "formatting a filesystem"),
    (re.compile(r"\bdd\b[^|;&]*\bof=/dev/(sd|nvme|hd|vd|xvd|mmcblk|disk)"), "writing to a raw device"),
    (re.compile(r">\s*/dev/(sd|nvme|hd|vd|xvd|mmcblk)\w*"), "writing to a raw device"),
    (re.compile(_AT_COMMAND + r"(shutdown|reboot|halt|poweroff)\b"), "shutting the machine down"),
    (re.compile(_AT_COMMAND + r"(systemctl|init|telinit)\s+(poweroff|reboot|halt|0|6)\b"), "shutting the machine down"),
    (re.compile(r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"), "a fork bomb"),
    (re.compile(r"\bchmod\s+(-R\s+)?[0-7]*777\s+/(\s|$)"), "opening permissions on /"),
    (re.compile(r"\bchown\s+-R\b[^;|&]*\s/(\s|$)"), "changing ownership of /"),
]

MAX_OUTPUT_BYTES = 16 * 1024 * 1024


_SEPARATORS = {";", "&", "&&", "|", "||", "|&", "(", ")", "\n", "{", "}", "`", "$("}
_WRAPPERS = {"sudo", "doas", "env", "nohup", "time", "exec", "command", "builtin", "nice", "xargs", "busybox"}
_DANGEROUS_TARGETS = re.compile(
    r"^(/+\*?|~/*\*?|\$\{?HOME\}?/*\*?|/+(home|root|etc|usr|var|boot|bin|lib)/*\*?|\.\./*\*?)$"
)
_HALT = {"shutdown", "reboot", "halt", "poweroff"}


def forbidden_reason(command: str) -> str | None:
    """Why ``command`` is refused, or None. A seatbelt, not a sandbox (README): approval is the protection.

    Each part of a pipeline or command list is parsed with ``shlex`` and judged by its command word and
    arguments (``rm -rf ~/*`` is caught however it is spelled; ``git commit -m "fix shutdown"`` is not); the
    text patterns above catch what parsing cannot see (redirections onto disks, fork bombs).
    """
    for pattern, reason in FORBIDDEN:
        if pattern.search(command):
            return reason
    for argv in _simple_commands(command):
        verdict = _judge(argv)
        if verdict:
            return verdict
    return None


def _simple_commands(command: str) -> list[list[str]]:
    lexer = shlex.shlex(command.replace("$(", " $( ").replace("`", " ` "), posix=True, punctuation_chars=";&|()\n")
    lexer.whitespace = " \t\r"
    lexer.wordchars += "$:@%+,{}[]^!#"  # ${HOME}/*, user@host: one word each, as bash sees them
    lexer.commenters = ""
    parts: list[list[str]] = [[]]
    try:
        for token in lexer:
            if token in _SEPARATORS or set(token) <= set(";&|()\n"):
                parts.append([])
            else:
                parts[-1].append(token)
    except ValueError:  # unbalanced quotes: bash would refuse it too; the text patterns still applied
        pass
    return [p for p in parts if p]


def _judge(argv: list[str]) -> str | None:
    while argv and (
        ("=" in argv[0] and not argv[0].startswith("="))
        or os.path.basename(argv[0]) in _WRAPPERS
        or (argv[0].startswith("-") and len(argv) > 1)
    ):
        argv = argv[1:]  # VAR=x, sudo -n, env, nohup ...: the real command word comes later
    if not argv:
        return None
    name, args = os.path.basename(argv[0]), argv[1:]
    flags = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    recursive = "r" in flags.lower() or "--recursive" in args
    if name == "rm" and recursive and any(_DANGEROUS_TARGETS.match(a) for a in args if not a.startswith("-")):
        return "recursive removal of / or the home folder"
    if name in _HALT or name.startswith("mkfs"):
        return "shutting the machine down" if name in _HALT else "formatting a filesystem"
    if name in ("systemctl", "init", "telinit") and any(a in ("poweroff", "reboot", "halt", "0", "6") for a in args):
        return "shutting the machine down"
    if name in ("chmod", "chown") and "R" in flags and any(a == "/" for a in args):
        return "changing permissions or ownership of /"
    return None


def scrubbed_env(secrets: tuple[str, ...]) -> dict[str, str]:
    env = {}
    for key, value in os.environ.items():
        if key.startswith("THREADLINE_") or key in PROVIDER_KEY_VARS or (value and value in secrets):
            continue
        env[key] = value
    return env


MAX_TIMEOUT_SECONDS = 30 * 60.0


async def run_command(ctx: ToolContext, args: dict[str, Any]) -> str:
    command = require_str(args, "command")
    reason = forbidden_reason(command)
    if reason:
        raise ToolDenied(f"Forbidden: {reason} is not allowed ({command[:200]})")
    timeout = args.get("timeout", ctx.settings.command_timeout_seconds)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ToolFailure("Invalid arguments: 'timeout' must be a positive number of seconds")
    # The model may ask for more time, never for forever (1e308, inf): capped at MAX_TIMEOUT_SECONDS.
    timeout = min(float(timeout), MAX_TIMEOUT_SECONDS)
    escalate = escalation(args)
    background = args.get("background", False)
    if not isinstance(background, bool):
        raise ToolFailure("Invalid arguments: 'background' must be true or false")
    sandbox = ctx.sandbox if ctx.sandbox is not None and ctx.sandbox.applies and not escalate else None
    env = scrubbed_env(ctx.secrets) | (ctx.processes.marker() if ctx.processes is not None else {})
    if sandbox is not None:
        env["TMPDIR"] = sandbox.policy.tmpdir
        env.pop("SSH_AUTH_SOCK", None)  # hidden inside (policy.always_hidden): do not point at it
        env.update(item.partition("=")[::2] for item in sandbox.policy.env)  # B-WT-1: a worktree task's git data
    ctx = replace(ctx, sandbox=sandbox)  # escalated: none
    if background:
        return await start_background(ctx, command, env)
    proc = await spawn_command(ctx, command, env)
    try:
        output = await asyncio.wait_for(_read_capped(proc), timeout=float(timeout))
        code = await proc.wait()
    except TimeoutError:
        _kill_group(proc)
        await proc.wait()
        raise ToolFailure(f"command timed out after {timeout:g} s and was killed: {command[:200]}") from None
    except BaseException:  # cancelled turn: kill the whole group, then let the cancellation through
        _kill_group(proc)
        await asyncio.shield(proc.wait())
        raise
    text = output.decode("utf-8", errors="replace")
    if code != 0:
        note = denial_note(text, sandbox.policy) if sandbox is not None else None
        raise ToolFailure(f"command exited with code {code}\n{text}" + (f"\n{note}" if note else ""))
    return f"{text}\n[exit code 0]" if text else "[exit code 0, no output]"


def escalation(args: dict[str, Any]) -> str | None:
    """The reason when the call asks to run outside the sandbox (``escalate: true``), else None."""
    escalate = args.get("escalate", False)
    if not isinstance(escalate, bool):
        raise ToolFailure("Invalid arguments: 'escalate' must be true or false")
    if not escalate:
        return None
    reason = args.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ToolFailure("Invalid arguments: 'escalate: true' needs a 'reason' the user will read")
    return reason.strip()


async def _read_capped(proc: asyncio.subprocess.Process) -> bytes:
    assert proc.stdout is not None
    chunks: list[bytes] = []
    size = 0
    while chunk := await proc.stdout.read(1 << 16):
        if size < MAX_OUTPUT_BYTES:
            chunks.append(chunk[: MAX_OUTPUT_BYTES - size])
        size += len(chunk)
    data = b"".join(chunks)
    if size > MAX_OUTPUT_BYTES:
        data += f"\n[output cut at {MAX_OUTPUT_BYTES} of {size} bytes]".encode()
    return data


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


TOOLS = [
    Tool(
        "run_command",
        "Run a shell command (bash) in the session folder and return its output and exit code.",
        schema(
            ["command"],
            command={"type": "string"},
            timeout={"type": "number", "description": "Seconds before the command is killed."},
            escalate={"type": "boolean", "description": "Run outside the sandbox, with a reason; asks the user."},
            reason={"type": "string"},
            background={
                "type": "boolean",
                "description": "Start it and return at once with a process id (a server, a watcher); read its "
                "output with process_output, end it with stop_process.",
            },
        ),
        run_command,
        approval="command",
    ),
]
