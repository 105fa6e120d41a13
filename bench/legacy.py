"""The cost benchmark's "Threadline before": ``server/context/`` as it was at commit b10667b, read from git history.

Each stage (``view``, ``clip``, ``fallback``, ``micro``, ``repair``, ``summary``, ``tail``, ``tokens``) is the file
``git show b10667b:server/context/NAME.py``, imported as a submodule of the package ``bench_b10667b`` (never as
``server.context``), so the "before" line of the cost section does not move when the pipeline changes and no copy of
old code sits in the tree. ``legacy_requests`` drives them the way ``server/agent/views.py`` and the loop did then:
one view per model call, the summary anchors carried within a user turn and reset at the next, the view clipped to
the window. Nothing in ``server`` imports this.

A clone without that commit (CI's shallow clones) gets ``LegacyUnavailable``, whose message names the commit and
how to fetch it, before any replay starts (``require_legacy``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

LEGACY_COMMIT = "b10667ba716c169a83d1697b50d6c0077bcfe965"  # "bench: rerun after the tool-call repair change"
PACKAGE = "bench_b10667b"
STAGES = ("clip", "fallback", "micro", "repair", "summary", "tail", "tokens", "view")
REPO = Path(__file__).resolve().parent.parent


class LegacyUnavailable(RuntimeError):
    """The b10667b sources cannot be read from this checkout's git history."""


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError as err:
        raise LegacyUnavailable(
            f"The cost benchmark's 'Threadline before' policy is loaded from git history (commit {LEGACY_COMMIT[:7]}), "
            "and git is not installed. Install git and run the benchmark from a git clone."
        ) from err


def require_legacy() -> None:
    """Raise ``LegacyUnavailable`` with the way out when commit b10667b is not in this clone."""
    if _git("cat-file", "-e", f"{LEGACY_COMMIT}^{{commit}}").returncode == 0:
        return
    shallow = _git("rev-parse", "--is-shallow-repository").stdout.strip()
    if shallow not in ("true", "false"):
        raise LegacyUnavailable(
            f"The cost benchmark's 'Threadline before' policy is loaded from git history (commit {LEGACY_COMMIT[:7]}), "
            f"but {REPO} is not a git clone. Run the benchmark from a clone of the repository."
        )
    hint = "This clone is shallow (CI clones often are): " if shallow == "true" else ""
    raise LegacyUnavailable(
        f"The cost benchmark's 'Threadline before' policy is loaded from git history, and commit {LEGACY_COMMIT} "
        f"is not in this clone. {hint}fetch the history with `git fetch --unshallow` (or "
        f"`git fetch origin {LEGACY_COMMIT}`), then run the benchmark again."
    )


class _HistoryLoader(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``bench_b10667b`` and its stages and executes their source as read from the commit."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == PACKAGE:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        package, _, stage = fullname.rpartition(".")
        if package == PACKAGE and stage in STAGES:
            return importlib.machinery.ModuleSpec(fullname, self, origin=f"{LEGACY_COMMIT[:7]}:{_path(stage)}")
        return None

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        if module.__name__ == PACKAGE:
            module.__path__ = []  # a package, so the stages' relative imports resolve to this finder
            return
        stage = module.__name__.rpartition(".")[2]
        shown = _git("show", f"{LEGACY_COMMIT}:{_path(stage)}")
        if shown.returncode != 0:
            raise LegacyUnavailable(f"git show {LEGACY_COMMIT[:7]}:{_path(stage)} failed: {shown.stderr.strip()}")
        origin = f"{LEGACY_COMMIT[:7]}:{_path(stage)}"  # what tracebacks name: the file as it was at the commit
        exec(compile(shown.stdout, origin, "exec"), module.__dict__)


def _path(stage: str) -> str:
    return f"server/context/{stage}.py"


def load_legacy(stage: str) -> ModuleType:
    """The stage ``stage`` of ``server/context/`` at b10667b, imported once per process."""
    require_legacy()
    if not any(isinstance(finder, _HistoryLoader) for finder in sys.meta_path):
        sys.meta_path.append(_HistoryLoader())
    return importlib.import_module(f"{PACKAGE}.{stage}")


def legacy_requests(
    transcript: Sequence[dict[str, Any]], steps: Sequence[tuple[int, int]], usable_window: int
) -> Iterator[list[dict[str, Any]]]:
    """The messages sent at each step; ``steps`` are (user turn, transcript messages the call saw).

    ``usable_window`` is the window less the tool definitions, as the loop's view builder had it
    (no calibration: a replay reports no usage).
    """
    view_mod, clip, tokens = load_legacy("view"), load_legacy("clip"), load_legacy("tokens")
    settings = view_mod.ViewSettings(usable_window)
    counts = [tokens.estimate_message_tokens(m) for m in transcript]  # the store's per-message estimates
    anchors: tuple = ()
    turn = None
    for step_turn, upto in steps:
        if step_turn != turn:
            anchors, turn = (), step_turn  # R-SUM-4 as built then: a new user turn starts without anchors
        view = view_mod.build_request_view(transcript[:upto], settings, token_counts=counts[:upto], anchors=anchors)
        anchors = tuple(view.anchors)
        yield clip.fit_to_window(view).messages
