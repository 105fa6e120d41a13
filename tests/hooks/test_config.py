"""Hook tables, what a finished hook's answer means, the Hook notes section, and the unattended seam."""

from __future__ import annotations

import asyncio

import pytest

from server.config import load_settings
from server.config_file import ConfigError
from server.context.summary import DEFAULT_SECTION_BUDGET, with_hook_notes
from server.context.tokens import estimate_text_tokens
from server.emit import Emitter
from server.hooks.config import HookSpec, read_project_hooks
from server.hooks.run import interpret
from server.hooks.service import HookChoices, HookService


def test_hooks_from_config_toml(tmp_path):
    (tmp_path / "config.toml").write_text(
        '[[hooks.PreToolUse]]\ncommand = "check"\nmatcher = "run_command|mcp__.*"\ntimeout = 5\n'
        '[[hooks.Stop]]\ncommand = "tests pass"\n'
    )
    hooks = load_settings({"THREADLINE_HOME": str(tmp_path)}).hooks
    assert hooks == (
        HookSpec("PreToolUse", "check", "user", "run_command|mcp__.*", 5.0),
        HookSpec("Stop", "tests pass", "user", None, 60.0),
    )
    assert hooks[0].matches("run_command") and hooks[0].matches("mcp__fake__echo")
    assert not hooks[0].matches("run_command_x") and not hooks[0].matches("read_file")  # the whole name
    assert hooks[1].matches(None)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[[hooks.PreTool]]\ncommand = "x"\n', "hooks.PreTool: unknown event"),
        ("[[hooks.Stop]]\ntimeout = 3\n", "hooks.Stop[0].command is required"),
        ('[[hooks.PreToolUse]]\ncommand = "x"\nmatcher = "("\n', "hooks.PreToolUse[0].matcher is not a valid"),
        ('[[hooks.Stop]]\ncommand = "x"\ntimeout = 0\n', "hooks.Stop[0].timeout must be"),
        ('[[hooks.Stop]]\ncommand = "x"\nmatch = "y"\n', "unknown field match"),
        ('[hooks.Stop]\ncommand = "x"\n', "must be written [[hooks.Stop]]"),
    ],
)
def test_a_bad_hook_table_is_a_config_error_naming_it(tmp_path, text, says):
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match=r".*") as raised:
        load_settings({"THREADLINE_HOME": str(tmp_path)})
    assert says in str(raised.value)


def test_a_bad_project_file_runs_nothing_and_says_why(tmp_path):
    (tmp_path / ".threadline").mkdir()
    (tmp_path / ".threadline" / "hooks.toml").write_text("[[hooks.Nope]]\ncommand = 'x'\n")
    project = read_project_hooks(tmp_path)
    assert project is not None and project.hooks == () and "unknown event" in str(project.problem)
    assert read_project_hooks(tmp_path / ".threadline") is None


SPEC = HookSpec("PreToolUse", "hook", "user")


@pytest.mark.parametrize(
    ("code", "out", "err", "decision", "failure"),
    [
        (0, "", "", None, None),
        (0, '{"decision": "deny", "reason": "no"}', "", "deny", None),
        (0, '{"decision": "allow"}\n', "", "allow", None),
        (2, "", "blocked because", "block", None),
        (1, "", "Traceback", None, "exited with code 1"),
        (-9, "", "", None, "was killed (signal 9)"),
        (0, "plain text", "", None, "printed output that is not a JSON object"),
        (0, "[1]", "", None, "printed JSON that is not an object"),
        (0, '{"decision": "maybe"}', "", None, "answered decision 'maybe'"),
        (0, '{"reason": 3}', "", None, "answered reason that is not a string"),
    ],
)
def test_B_HOOK_1_what_a_finished_hook_said(code, out, err, decision, failure):
    result = interpret(SPEC, code, out, err, 1)
    assert result.decision == decision
    assert (result.failure is None) == (failure is None)
    assert (result.failure or "").startswith(failure or "")
    if code == 2:
        assert result.reason == "blocked because"


def test_hook_notes_stay_within_the_section_budget_and_are_deterministic():
    notes = "keep this: " + "detail " * 3000
    once = with_hook_notes("[summary]", notes)
    assert once == with_hook_notes("[summary]", notes)
    section = once.split("Hook notes:\n", 1)[1]
    assert estimate_text_tokens("Hook notes:\n" + section) <= DEFAULT_SECTION_BUDGET
    assert section.startswith("keep this: detail") and section.endswith("…")
    assert with_hook_notes("[summary]", None) == with_hook_notes("[summary]", "  ") == "[summary]"


def test_an_unattended_session_never_runs_unapproved_project_hooks(tmp_path):
    """The seam for ``threadline exec``: nobody is asked, the project's hooks do not run, a notice says so."""
    (tmp_path / ".threadline").mkdir()
    (tmp_path / ".threadline" / "hooks.toml").write_text("[[hooks.Stop]]\ncommand = 'touch ran'\n")
    sent: list[tuple[str, dict]] = []
    asked: list[dict] = []

    async def ask(method: str, params: dict) -> dict:
        asked.append(params)
        return {"decision": "allowAlways"}

    service = HookService(tmp_path / "home-does-not-need-to-exist", ())
    hooks = asyncio.run(
        service.for_turn(
            HookChoices(),
            tmp_path,
            Emitter(lambda m, p: sent.append((m, p)), "ses_1", None),
            ask,
            None,
            (),
            unattended=True,
        )
    )
    assert hooks.specs == () and asked == []
    assert any("not approved (nobody to ask)" in getattr(p.update, "message", "") for _, p in sent)
