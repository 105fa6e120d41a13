"""Running one hook: its JSON input on stdin, a timeout, a scrubbed environment, and what its answer means.

Exit 0 goes on; its stdout, when not empty, must be one JSON object ``{decision?, reason?, additionalContext?}``.
Exit 2 blocks, with stderr as the reason. Anything else (another exit code, a crash, a timeout, unreadable
output) is a *failure*: the caller decides what that means for its event (SPEC B-HOOK-1: a ``PreToolUse`` failure
blocks the call; other events go on with a notice). Provider keys never reach a hook: its environment is
``run_command``'s scrubbed one.

A hook runs under the session's sandbox unless its spec says ``sandbox = false`` (B-HOOK-2): ``bash
scripts/lint.sh`` runs a file a confined command may have rewritten, so running it unconfined would let the
agent out. Like every process the server starts, it starts through ``server.sandbox.start`` and is contained
(``ProcessGroups.preexec``): it ends with the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from server.hooks.config import PROJECT_FILE, HookSpec
from server.sandbox.denials import looks_denied
from server.sandbox.mode import CommandSandbox
from server.sandbox.policy import SandboxPolicy
from server.sandbox.start import Confine, start
from server.tools.command import scrubbed_env
from server.tools.processes import ProcessGroups

DECISIONS = ("allow", "deny", "ask", "block")
MAX_STREAM_BYTES = 1024 * 1024  # read from each stream; the rest is drained and dropped
EXCERPT_CHARS = 2000  # what a hookRun event keeps of the output
REASON_CHARS = 4000
CONTEXT_CHARS = 10_000
LAST_LINE_CHARS = 300  # of the stderr line a confined hook's failure quotes


@dataclass(frozen=True)
class HookResult:
    spec: HookSpec
    exit_code: int | None
    duration_ms: int
    output: str  # a bounded excerpt of stdout and stderr
    decision: str | None = None
    reason: str | None = None
    context: str | None = None
    failure: str | None = None  # why the hook failed (exit code, timeout, unreadable output), or None
    sandbox_note: str | None = None  # a confined hook that failed: it ran in the sandbox, what it said, the fix

    @property
    def explained_failure(self) -> str | None:
        """``failure`` and, for a confined hook, why the sandbox may be the cause and how to run it outside."""
        if self.failure is None or self.sandbox_note is None:
            return self.failure
        return f"{self.failure}. {self.sandbox_note}"

    def record(self) -> dict[str, Any]:
        """The ``hookRun`` event's payload (and the update's fields), camelCase."""
        out: dict[str, Any] = {
            "event": self.spec.event,
            "command": self.spec.command,
            "source": self.spec.source,
            "exitCode": self.exit_code,
            "decision": self.decision,
            "durationMs": self.duration_ms,
            "output": self.output,
        }
        pairs = (("reason", self.reason), ("additionalContext", self.context), ("failure", self.explained_failure))
        for key, value in pairs:
            if value:
                out[key] = value
        return out


async def run_hook(
    spec: HookSpec,
    payload: dict[str, Any],
    cwd: Path,
    secrets: tuple[str, ...],
    sandbox: CommandSandbox | None = None,
    processes: ProcessGroups | None = None,
) -> HookResult:
    """Run one hook in ``cwd``: under ``sandbox`` unless the spec opts out (or the session's mode is off), and
    inside ``processes``' namespace when given."""
    started = time.monotonic()
    confine = sandbox if spec.sandbox and sandbox is not None and sandbox.applies else None
    env = scrubbed_env(secrets) | (processes.marker() if processes is not None else {})
    if confine is not None:
        env["TMPDIR"] = confine.policy.tmpdir
        env.pop("SSH_AUTH_SOCK", None)  # hidden inside the sandbox
    try:
        proc = await start(  # in a session of its own: a timeout kills everything the hook started
            ["/bin/bash", "-c", spec.command],
            confine=Confine(confine.policy, confine.support.abi, confine.support.namespaces) if confine else None,
            contain=processes.preexec if processes is not None else None,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        return HookResult(spec, None, _ms(started), "", failure=f"could not start: {exc}")
    try:
        out, err = await asyncio.wait_for(_talk(proc, payload), spec.timeout_s)
    except TimeoutError:
        _kill(proc)
        await proc.wait()
        return HookResult(spec, None, _ms(started), "", failure=f"timed out after {spec.timeout_s:g} s")
    except asyncio.CancelledError:
        _kill(proc)
        raise
    code = proc.returncode
    text, errors = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    result = interpret(spec, code, text, errors, _ms(started))
    if confine is not None and result.failure is not None and code not in (0, None):
        result = replace(result, sandbox_note=sandbox_note(spec, confine.policy, text, errors))
    return result


def sandbox_note(spec: HookSpec, policy: SandboxPolicy, out: str, err: str) -> str:
    """Why a confined hook that failed may have been refused by the sandbox, in words the model and the user read:
    it ran in the sandbox, its last stderr line (a ``PermissionError`` on a log outside the folder), and the fix
    (``sandbox = false`` in its own table, which runs it unconfined: the user's call, never the model's)."""
    last = next((line.strip() for line in reversed(err.splitlines()) if line.strip()), None)
    said = f'its last stderr line: "{last[:LAST_LINE_CHARS]}"' if last else "it wrote nothing on stderr"
    where = "config.toml in the data folder ($THREADLINE_HOME)" if spec.source == "user" else PROJECT_FILE
    fix = f"`sandbox = false` in this hook's `[[hooks.{spec.event}]]` table in {where} runs it unconfined"
    kinds, _ = looks_denied(f"{err}\n{out}", policy)
    if kinds:
        refused = "; ".join(kinds)
        return f"It ran in the {policy.mode} sandbox, which looks to have refused {refused}; {said}. Setting {fix}."
    return f"It ran in the {policy.mode} sandbox; {said}. If the sandbox refused it, setting {fix}."


def interpret(spec: HookSpec, code: int | None, out: str, err: str, duration_ms: int) -> HookResult:
    """What a finished hook said (see the module doc)."""
    excerpt = _excerpt(out, err)
    if code == 2:
        reason = err.strip()[:REASON_CHARS] or f"blocked by hook {spec.command!r} (exit 2)"
        return HookResult(spec, code, duration_ms, excerpt, "block", reason)
    if code != 0:
        failure = f"exited with code {code}" if code is not None and code > 0 else f"was killed (signal {-(code or 0)})"
        return HookResult(spec, code, duration_ms, excerpt, failure=failure)
    if not out.strip():
        return HookResult(spec, code, duration_ms, excerpt)
    try:
        answer = json.loads(out)
    except ValueError:
        return HookResult(spec, code, duration_ms, excerpt, failure="printed output that is not a JSON object")
    problem = _check(answer)
    if problem:
        return HookResult(spec, code, duration_ms, excerpt, failure=problem)
    return HookResult(
        spec,
        code,
        duration_ms,
        excerpt,
        answer.get("decision"),
        (answer.get("reason") or None) and str(answer["reason"])[:REASON_CHARS],
        (answer.get("additionalContext") or None) and str(answer["additionalContext"])[:CONTEXT_CHARS],
    )


def _check(answer: Any) -> str | None:
    if not isinstance(answer, dict):
        return "printed JSON that is not an object"
    decision = answer.get("decision")
    if decision is not None and decision not in DECISIONS:
        return f"answered decision {decision!r}; expected one of {', '.join(DECISIONS)}"
    for key in ("reason", "additionalContext"):
        if answer.get(key) is not None and not isinstance(answer[key], str):
            return f"answered {key} that is not a string"
    return None


async def _talk(proc: asyncio.subprocess.Process, payload: dict[str, Any]) -> tuple[bytes, bytes]:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    data = json.dumps(payload, ensure_ascii=False).encode()
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):  # a hook that does not read its input may still answer
        pass
    finally:
        proc.stdin.close()
    out, err = await asyncio.gather(_bounded(proc.stdout), _bounded(proc.stderr))
    await proc.wait()
    return out, err


async def _bounded(stream: asyncio.StreamReader) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < MAX_STREAM_BYTES:
            kept += chunk[: MAX_STREAM_BYTES - len(kept)]
    return bytes(kept)


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _excerpt(out: str, err: str) -> str:
    text = out.strip()
    if err.strip():
        text = f"{text}\n[stderr]\n{err.strip()}" if text else f"[stderr]\n{err.strip()}"
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
