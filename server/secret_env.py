"""Keep provider keys out of the server's environment block, where anything it starts could read them.

Scrubbing ``os.environ`` is not enough: ``/proc/<pid>/environ`` shows the environment the process was started
with, and every command ``run_command`` runs can read its parent's (``cat /proc/$PPID/environ``). So when ``serve``
finds a key in its environment, it re-executes itself (same pid, same arguments, same stdio) with the keys removed
from the environment, handing them over a pipe that the new image reads once and closes.
"""

from __future__ import annotations

import json
import os
import sys

KEY_VARS = (
    "THREADLINE_API_KEY",
    "OPENAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "DASHSCOPE_API_KEY",
    "MOONSHOT_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
)
_FD_VAR = "THREADLINE_SECRETS_FD"
_MAX_PIPE_BYTES = 60_000  # under a pipe's buffer, so the write cannot block before the exec


def reexec_without_keys() -> None:
    """Re-execute this process without provider keys (or any variable holding the same value) in its
    environment; returns only when there is nothing to hide, or after the re-exec (in the new image)."""
    if _FD_VAR in os.environ:
        return
    keys = {k: os.environ[k] for k in KEY_VARS if os.environ.get(k)}
    if not keys:
        return
    payload = json.dumps(keys).encode()
    if len(payload) > _MAX_PIPE_BYTES:
        return
    values = set(keys.values())
    env = {k: v for k, v in os.environ.items() if k not in keys and v not in values}
    read_end, write_end = os.pipe()
    os.write(write_end, payload)
    os.close(write_end)
    os.set_inheritable(read_end, True)
    env[_FD_VAR] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def take_keys() -> dict[str, str]:
    """The keys the previous image handed over (read once; the pipe is closed), or {}."""
    fd = os.environ.pop(_FD_VAR, None)
    if fd is None:
        return {}
    try:
        with os.fdopen(int(fd), "rb") as pipe:
            keys = json.loads(pipe.read() or b"{}")
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in keys.items() if k in KEY_VARS and isinstance(v, str)}
