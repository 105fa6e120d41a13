"""Real repositories for the worktree tests (B-WT-1): made with git, inspected with git."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

IDENT = ["-c", "user.name=Tester", "-c", "user.email=tester@example.com", "-c", "commit.gpgsign=false"]
# What a command the model double asks for commits with (the sandbox's git has no identity of its own)
COMMIT = "git -c user.name=Agent -c user.email=agent@example.com -c commit.gpgsign=false commit -q"


def git(cwd: Path | str, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {args}: {done.stderr}"
    return done.stdout


def make_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    """A repository on ``main`` with one commit of ``files`` (default ``a.txt``)."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for name, text in (files or {"a.txt": "one\ntwo\nthree\n"}).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, *IDENT, "commit", "-qm", "start")
    return repo


def commit_in(repo: Path, name: str, text: str, message: str = "change") -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, *IDENT, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


def checkout_state(repo: Path) -> dict[str, Any]:
    """The main checkout as a user sees it: HEAD, the index, the status and every file's bytes."""
    files = {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "index": git(repo, "ls-files", "--stage"),  # its entries (their stat data may be refreshed)
        "status": git(repo, "status", "--porcelain", "--untracked-files=all"),
        "files": files,
    }


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def command(call_id: str, text: str) -> dict[str, Any]:
    return call(call_id, "run_command", command=text)
