"""Running git for the server (outside any sandbox): argv only, no shell, no pager, no prompt, bounded in time."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from server.sandbox.start import DEVNULL, PIPE, start

TIMEOUT_SECONDS = 120.0
# Nothing git might start on its own: no terminal prompt, no pager, no editor, no optional index writes
QUIET = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "true",
    "GIT_OPTIONAL_LOCKS": "0",
    "LC_ALL": "C",
}
# What a commit made by the server says when the user's config names nobody (a test machine, a container)
IDENTITY = {
    "GIT_AUTHOR_NAME": "Threadline",
    "GIT_AUTHOR_EMAIL": "threadline@localhost",
    "GIT_COMMITTER_NAME": "Threadline",
    "GIT_COMMITTER_EMAIL": "threadline@localhost",
}


class GitFailed(Exception):
    """git ended with a status other than 0; ``stderr`` says why."""

    def __init__(self, args: list[str], code: int, stderr: str):
        super().__init__(f"git {' '.join(args[:3])} failed ({code}): {stderr.strip()[:500]}")
        self.code, self.stderr = code, stderr


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, **QUIET, **(extra or {})}


async def run(cwd: Path | str, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> Done:
    """``git -C cwd ARGS``; never raises for a status, only for git missing or the time running out."""
    code, out, err = await _exec(cwd, args, env, stdin)
    return Done(code, out.decode(errors="replace"), err.decode(errors="replace"))


async def check(cwd: Path | str, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> str:
    """``git -C cwd ARGS``'s output; ``GitFailed`` for any other status than 0."""
    done = await run(cwd, *args, env=env, stdin=stdin)
    if done.code != 0:
        raise GitFailed(list(args), done.code, done.err)
    return done.out


async def check_bytes(
    cwd: Path | str, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> bytes:
    code, out, err = await _exec(cwd, args, env, stdin)
    if code != 0:
        raise GitFailed(list(args), code, err.decode(errors="replace"))
    return out


async def _exec(
    cwd: Path | str, args: tuple[str, ...], env: dict[str, str] | None, stdin: bytes | None
) -> tuple[int, bytes, bytes]:
    # The server's own git, outside the sandbox (it merges and brings a task's objects in), a child of the server
    proc = await start(
        ["git", "-C", str(cwd), *args],
        confine=None,
        contain=None,
        stdin=PIPE if stdin is not None else DEVNULL,
        env=git_env(env),
        new_session=False,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), TIMEOUT_SECONDS)
    except BaseException:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out, err
