"""What a sandboxed command may do (B-SBX-1), as plain data that crosses into the launcher as JSON.

Stdlib only: the launcher (``server.sandbox.launch``) decodes it in a fresh interpreter before it confines itself.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MODES = ("workspace-write", "read-only", "off")
DEFAULT_MODE = "workspace-write"
# Inside a writable folder these stay read-only: a command must not plant a git hook (.git/hooks, core.fsmonitor
# in .git/config) or change the frozen context and hooks (.threadline/).
READ_ONLY_CHILDREN = (".git", ".threadline")
HOME_SECRETS = ("~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.netrc")


def default_deny_read(home: Path, env: dict[str, str] | None = None) -> tuple[str, ...]:
    """B-SBX-1's defaults: the usual credential folders of the user's home, then what is always hidden
    (``always_hidden``). ``HOME`` is read from ``env`` so a test can point it away."""
    env = dict(os.environ if env is None else env)
    user_home = env.get("HOME") or os.path.expanduser("~")
    return (*(p.replace("~", user_home, 1) for p in HOME_SECRETS), *always_hidden(home, env))


def always_hidden(home: Path, env: dict[str, str]) -> tuple[str, ...]:
    """Hidden whatever ``deny_read`` says: the server's own data folder (transcripts, approval memory, possibly
    keys) and the SSH agent's socket (with it a command could sign in anywhere as you; Landlock does not govern
    connecting to a unix socket, so it is covered instead)."""
    agent = env.get("SSH_AUTH_SOCK")
    return (str(home), *([agent] if agent else []))


@dataclass(frozen=True)
class SandboxSettings:
    """``[sandbox]`` with ``THREADLINE_SANDBOX`` over its mode (B-SBX-1), as ``server.config`` reads them: the
    server's default for every session. ``deny_read`` is the whole list, defaults included."""

    mode: str = DEFAULT_MODE
    network: bool = False
    writable_roots: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()


@dataclass(frozen=True)
class SandboxPolicy:
    """One command's confinement. ``writable`` are folders with every write right; ``read_only`` are folders
    inside them that stay read-only; ``deny_read`` are hidden (an empty folder, an empty file)."""

    mode: str
    cwd: str
    tmpdir: str
    writable: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    network: bool = False
    skipped: tuple[str, ...] = field(default=())  # deny_read paths left visible, and why (they hold the folder)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SandboxPolicy:
        data: dict[str, Any] = json.loads(text)
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**fields)


def build_policy(
    mode: str,
    cwd: Path,
    tmpdir: Path,
    *,
    network: bool = False,
    writable_roots: tuple[str, ...] = (),
    deny_read: tuple[str, ...] = (),
) -> SandboxPolicy:
    """The policy for ``mode`` in folder ``cwd``. Paths are resolved (a mount or a Landlock rule follows the real
    path); a deny_read path that is the folder itself or holds it is left visible, since hiding it would hide
    the folder too (said in ``skipped``)."""
    if mode not in MODES:
        raise ValueError(f"sandbox mode must be one of {', '.join(MODES)}, got {mode!r}")
    real_cwd = os.path.realpath(cwd)
    writable = [os.path.realpath(tmpdir)]
    if mode == "workspace-write":
        writable += [real_cwd, *(os.path.realpath(os.path.expanduser(r)) for r in writable_roots)]
    # Resolved, so a `.git` that is a link to a folder inside the writable one is protected where it really is;
    # the temp folder has none worth keeping.
    read_only = [os.path.realpath(os.path.join(root, name)) for root in writable[1:] for name in READ_ONLY_CHILDREN]
    hidden: list[str] = []
    skipped: list[str] = []
    for raw in deny_read:
        path = os.path.realpath(os.path.expanduser(raw))
        if real_cwd == path or real_cwd.startswith(path.rstrip("/") + "/"):
            skipped.append(f"{raw} (it holds the session folder)")
        elif path not in hidden:
            hidden.append(path)
    return SandboxPolicy(
        mode=mode,
        cwd=real_cwd,
        tmpdir=os.path.realpath(tmpdir),
        writable=tuple(dict.fromkeys(writable)),
        read_only=tuple(read_only),
        deny_read=tuple(hidden),
        network=network,
        skipped=tuple(skipped),
    )
