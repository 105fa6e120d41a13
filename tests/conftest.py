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
# ``bash tests/run.sh --quick`` runs ``-m "not slow"``: the pure core and the server's own tests, in about a minute.
# Slow: what starts editors, the sandbox or many real servers, and the long replays (each file here is over ~5 s).
SLOW_DIRS = ("e2e", "reliability", "acp", "sandbox", "editors")
SLOW_FILES = {
    "cli/test_chat_terminal.py",
    "cli/test_eval.py",
    "cli/test_daemon_cli.py",
    "context/test_incremental.py",
    "context/test_trajectories.py",
    "hooks/test_policy_check.py",
    "hooks/test_hooks_e2e.py",
    "hooks/test_hook_examples.py",
    "replay/test_recorded_text.py",
    "tools/web/test_fetch.py",
}
TESTS = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: left out of the quick loop (bash tests/run.sh --quick)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        where = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
        if where.split("/", 1)[0] in SLOW_DIRS or where in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
