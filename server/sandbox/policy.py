"""What a sandboxed command may do (B-SBX-1), as plain data that crosses into the launcher as JSON.

Stdlib only: the launcher (``server.sandbox.launch``) decodes it in a fresh interpreter before it confines itself.
"""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

MODES = ("workspace-write", "read-only", "off")
DEFAULT_MODE = "workspace-write"
# Inside a writable folder these stay read-only: a command must not plant a git hook (.git/hooks, core.fsmonitor
# in .git/config) or change the frozen context and hooks (.threadline/). Every other `.git` below is found by
# ``nested_git`` at each command's start (B-SBX-4).
READ_ONLY_CHILDREN = (".git", ".threadline")
GIT = ".git"
# The walk for nested repositories stops after this many folders (about 0.2 s warm on a 2-core machine; see
# docs/SANDBOX.md): a folder past it is not searched, breadth first, so shallow repositories come first.
NESTED_WALK_LIMIT = 20_000
MAX_NESTED = 500  # read-only mounts for nested repositories, at most
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


def hidden_paths(deny_read: tuple[str, ...], cwd: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``deny_read`` paths as hidden (resolved, once each), and the ones left visible with why: a path that
    is the folder itself or holds it (hiding it would hide the folder). One list for commands and file tools."""
    real_cwd = os.path.realpath(cwd)
    hidden: list[str] = []
    skipped: list[str] = []
    for raw in deny_read:
        path = os.path.realpath(os.path.expanduser(raw))
        if real_cwd == path or real_cwd.startswith(path.rstrip("/") + "/"):
            skipped.append(f"{raw} (it holds the session folder)")
        elif path not in hidden:
            hidden.append(path)
    return tuple(hidden), tuple(skipped)


def is_hidden(path: str | Path, hidden: tuple[str, ...]) -> bool:
    """Whether ``path`` (already resolved) is a hidden path or inside one: what the sandbox covers with an empty
    mount is what the file tools, ``@path`` and editor context items refuse (B-SBX-1)."""
    text = str(path)
    return any(text == h or text.startswith(h.rstrip("/") + "/") for h in hidden)


def is_git_name(name: str) -> bool:
    """A path component git treats as its folder: ``.git`` in any case (case-insensitive file systems)."""
    return name.casefold() == GIT


def gitfile_target(path: str) -> str | None:
    """The git folder a ``.git`` file (a worktree's or submodule's) points at, resolved, or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in head.splitlines():
        if line.startswith("gitdir:"):
            target = line[len("gitdir:") :].strip()
            return os.path.realpath(os.path.join(os.path.dirname(path), target)) if target else None
    return None


def _laid_out_as_git(entries: list[os.DirEntry[str]]) -> bool:
    """``HEAD``, ``objects/`` and ``refs/`` side by side, as git itself recognises a git folder; from the listing
    the walk already has, so it costs nothing more."""
    kinds = {e.name: e for e in entries if e.name in ("HEAD", "objects", "refs")}
    try:
        return (
            len(kinds) == 3
            and not kinds["HEAD"].is_dir(follow_symlinks=False)
            and all(kinds[n].is_dir(follow_symlinks=False) for n in ("objects", "refs"))
        )
    except OSError:
        return False


def nested_git(roots: tuple[str, ...], limit: int = NESTED_WALK_LIMIT) -> tuple[list[str], bool]:
    """Every ``.git`` below ``roots`` (a folder, a gitfile and the folder it names, where a link leads) and every
    folder laid out as a repository (a bare one), found breadth first without following links, and whether the
    walk stopped at ``limit`` folders."""
    found: list[str] = []
    queue, seen = deque(roots), 0
    while queue:
        folder = queue.popleft()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        if _laid_out_as_git(entries):  # a bare repository (or a git folder named otherwise): not walked into
            found.append(os.path.realpath(folder))
            continue
        for entry in entries:
            try:
                if is_git_name(entry.name):
                    real = os.path.realpath(entry.path)
                    found.append(real)
                    if entry.is_file(follow_symlinks=True) and (target := gitfile_target(entry.path)):
                        found.append(target)
                elif entry.is_dir(follow_symlinks=False):
                    seen += 1
                    if seen > limit:
                        return list(dict.fromkeys(found)), True
                    queue.append(entry.path)
            except OSError:
                continue
    return list(dict.fromkeys(found)), False


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
    # B-WT-1: git folders in ``writable`` that are the task's alone (a worktree's admin folder, its object folder):
    # the nested .git walk leaves them writable
    git_writable: tuple[str, ...] = ()
    env: tuple[str, ...] = ()  # NAME=VALUE a confined command gets (a worktree task's object folder)
    around: tuple[str, ...] = ()  # hidden folders that hold a writable one: hidden around it (``hidden_around``)

    def with_nested_git(self, limit: int = NESTED_WALK_LIMIT) -> SandboxPolicy:
        """This policy with every ``.git`` that exists now below the writable folders read-only too (B-SBX-4).
        Run at each command's start (in a worker thread: it walks the folder), so a repository made by one
        command is protected from the next."""
        if self.mode != "workspace-write":
            return self
        roots = tuple(r for r in self.writable if r != self.tmpdir and r not in self.git_writable)
        found, stopped = nested_git(roots, limit)
        extra = [p for p in found if p not in self.read_only and p not in self.git_writable and _under_any(p, roots)][
            :MAX_NESTED
        ]
        note = (f"nested .git search stopped after {limit} folders",) if stopped else ()
        fresh = self._hidden_now() if self.around else self.deny_read  # what appeared there since, hidden too
        return replace(self, read_only=(*self.read_only, *extra), skipped=(*self.skipped, *note), deny_read=fresh)

    def with_git_grant(
        self, writable: tuple[str, ...], read_only: tuple[str, ...], env: tuple[str, ...], around: tuple[str, ...]
    ) -> SandboxPolicy:
        """B-WT-1: this policy with a worktree task's own git data writable (``writable``: folders that are the
        task's alone), ``read_only`` files inside them kept as they are, ``env`` for its commands, and each of
        ``around`` (the data folder holding the worktree) hidden around what the command may reach. Only for
        ``workspace-write``: in the other modes a command writes no git data."""
        if self.mode != "workspace-write":
            return self
        real = tuple(os.path.realpath(p) for p in writable)
        granted = replace(
            self,
            writable=tuple(dict.fromkeys((*self.writable, *real))),
            read_only=(*self.read_only, *(os.path.realpath(p) for p in read_only)),
            git_writable=(*self.git_writable, *real),
            env=(*self.env, *env),
            around=(*self.around, *(os.path.realpath(p) for p in around)),
        )
        return replace(granted, deny_read=granted._hidden_now())

    def _hidden_now(self) -> tuple[str, ...]:
        keep = (self.cwd, *self.writable)
        outside = tuple(p for p in self.deny_read if not _under_any(p, self.around))
        inside = [p for top in self.around for p in hidden_around(top, keep)]
        return tuple(dict.fromkeys((*outside, *inside)))

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
    hidden, skipped = hidden_paths(deny_read, cwd)
    return SandboxPolicy(
        mode=mode,
        cwd=real_cwd,
        tmpdir=os.path.realpath(tmpdir),
        writable=tuple(dict.fromkeys(writable)),
        read_only=tuple(read_only),
        deny_read=hidden,
        network=network,
        skipped=skipped,
    )


def hidden_around(top: str, keep: tuple[str, ...]) -> list[str]:
    """Everything in ``top`` but the way to each of ``keep`` (itself whole): ``top`` hidden as far as it can be
    without hiding them. A link is left alone (hiding it would hide where it points, which is not ``top``'s)."""
    ways = [k for k in keep if k.startswith(top.rstrip("/") + "/")]
    if not ways:
        return [top]
    hidden: list[str] = []
    try:
        entries = list(os.scandir(top))
    except OSError:
        return hidden
    for entry in entries:
        if entry.is_symlink() or entry.path in ways:
            continue
        if any(k.startswith(entry.path + "/") for k in ways):
            hidden += hidden_around(entry.path, tuple(ways))
        else:
            hidden.append(entry.path)
    return hidden


def _under_any(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)
