"""Shared fixtures: ``tests/harness.py`` (servers, workspace, framing client) and the model double's plugin are
registered here for every test; the recorded trajectories the context tests replay are named here too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Property tests are sized by example count and bounded generated inputs, never by wall time: no deadline (a loaded
# 2-core machine runs an example ten times slower than an idle one), and at most 50 examples where a test says
# nothing. Each property test still states its own max_examples (tests/test_property_bounds.py checks both).
settings.register_profile("threadline", deadline=None, max_examples=50, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("threadline")

pytest.register_assert_rewrite("tests.harness")  # before the import below, so its asserts are rewritten too

from tests.harness import REPO  # noqa: E402
from tests.harness import RawConnection as RawConnection  # noqa: E402  (re-exported for older imports)
from tests.harness import server_env as server_env  # noqa: E402  (re-exported for older imports)

pytest_plugins = ["tests.fakes.plugin", "tests.harness"]

TRAJECTORIES = REPO / "data" / "trajectories"  # in the repository (a clone has nothing beside it); see its README
KIMI = TRAJECTORIES / "kimi-cli-entire__29_77bc73228c_1__full.json"  # 211 messages, zh + en
MINI_SWE = TRAJECTORIES / "mini-swe-agent-pr816__deepseek_chat_dev_rerun__pylint-dev__astroid-1333.json"  # 378


def load_trajectory(path: Path) -> list[dict[str, Any]]:
    """A real recorded conversation (read-only input; derive variants in code)."""
    return json.loads(path.read_text(encoding="utf-8"))


def long_history(count: int) -> list[dict[str, Any]]:
    """``count`` real messages for a long session: the kimi-cli and mini-swe-agent trajectories (system messages
    left out) cycled, each cycle's tool call ids made unique so every result still answers its own call."""
    source = [m for path in (KIMI, MINI_SWE) for m in load_trajectory(path) if m["role"] != "system"]
    out = []
    for i in range(count):
        msg, cycle = source[i % len(source)], i // len(source)
        calls = [dict(c, id=f"{c['id']}_{cycle}") for c in msg.get("tool_calls") or []] or None
        call_id = f"{msg['tool_call_id']}_{cycle}" if msg.get("tool_call_id") else None
        out.append({k: v for k, v in dict(msg, tool_calls=calls, tool_call_id=call_id).items() if v is not None})
    return out


# --- the quick loop -------------------------------------------------------------------------------------------
# ``bash tests/run.sh --quick`` runs ``-m "not slow"``, in under a minute on 2 cores. Slow is decided by the time a
# test took, not by its folder: ``tests/slow_tests.txt`` lists the tests a measured run found slow (and the folders
# and files no run has measured yet); ``python -m tests.slow_list`` makes it again from a ``--durations=0`` report.
TESTS = Path(__file__).resolve().parent
SLOW_LIST = TESTS / "slow_tests.txt"


def slow_entries() -> tuple[set[str], tuple[str, ...]]:
    """The list's test ids (``tests/x.py::test_y[param]``), and its whole folders and files."""
    lines = [line.strip() for line in SLOW_LIST.read_text(encoding="utf-8").splitlines()]
    entries = [line for line in lines if line and not line.startswith("#")]
    return {e for e in entries if "::" in e}, tuple(e for e in entries if "::" not in e)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: left out of the quick loop (bash tests/run.sh --quick)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests, whole = slow_entries()
    for item in items:
        where = item.path.relative_to(TESTS.parent).as_posix() if item.path.is_relative_to(TESTS.parent) else ""
        if item.nodeid in tests or where.startswith(whole):  # node ids are relative to the repository
            item.add_marker(pytest.mark.slow)
