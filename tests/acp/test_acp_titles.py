"""ACP as CodeCompanion.nvim and avante.nvim use it, performed with the official SDK's client against a
real ``threadline acp`` process (every agent message checked against the ACP schema after each test):

- every permission request, a subagent's included, carries the call's kind, a title that shows the command or the
  path, ``pending``, and only the options the request offers;
- titles put what matters first (CodeCompanion keeps the part before a ``:``), a subagent's card says its task;
- the approval policy is a ``mode`` config option even without ``[models.NAME]``;
- a title derived from avante's wrapped prompt is the user's words, and a session nobody prompted is not listed.
"""

from __future__ import annotations

import pytest

from tests.acp.support import acp_fixture, command_call, fresh_fixture, new, write_call

pytestmark = pytest.mark.asyncio(loop_scope="module")

acp = acp_fixture()
fresh = fresh_fixture()

ALL = ["allow_once", "allow_always", "reject_once", "reject_always"]


def task(call_id: str, description: str, prompt: str) -> dict:
    args = {"description": description, "prompt": prompt}
    return {"tool_calls": [{"id": call_id, "name": "task", "arguments": args}]}


def updates_of(acp, sid: str, call_id: str) -> list:
    return [u for u in acp.editor.of(sid) if getattr(u, "tool_call_id", None) == call_id]


async def test_issue_42_a_subagents_permission_request_has_kind_title_and_status_and_its_card_says_its_task(
    acp, folder
):
    sid = await new(acp, folder)
    acp.fake.push(
        task("call_t1", "Run the test suite", "run npm test and report"),
        command_call("call_c1", "npm test --silent"),
        {"content": "tests ran"},
        {"content": "done"},
    )
    assert (await acp.prompt(sid, "delegate the tests")).stop_reason == "end_turn"
    [asked] = acp.editor.permissions
    assert asked.tool_call_id == "call_t1"  # the call the client knows: the parent's task
    assert (asked.title, asked.kind, asked.status) == ("`npm test --silent`", "execute", "pending")
    assert "npm test --silent" in asked.content[0].content.text
    assert acp.editor.offered == [ALL]
    card = updates_of(acp, sid, "call_t1")
    assert card[0].session_update == "tool_call" and card[0].title == "Run the test suite (subagent)"
    restored = [u for u in card if getattr(u, "title", None) == "Run the test suite (subagent)"][1:]
    assert restored and restored[0].status == "in_progress"  # after the question, the card shows its task again
    assert card[-1].status == "completed"


async def test_issue_42_only_the_offered_options_are_sent_and_an_escalation_says_it_in_the_title(acp, folder):
    sid = await new(acp, folder)
    escalated = {"command": "make release", "escalate": True, "reason": "writes outside the folder"}
    acp.fake.push(
        command_call("call_n1", "make check"),
        {"tool_calls": [{"id": "call_e1", "name": "run_command", "arguments": escalated}]},
        {"content": "ok"},
    )
    acp.editor.decide = lambda request: "reject_once"
    await acp.prompt(sid, "check, then release")
    plain, outside = acp.editor.permissions
    assert acp.editor.offered == [ALL, ["allow_once", "reject_once", "reject_always"]]  # no "Allow always" there
    assert (plain.title, plain.kind, plain.status) == ("`make check`", "execute", "pending")
    # issue 51: clients ask with the title alone (CodeCompanion: "Execute: TITLE ?"): the whole warning and the
    # model's reason are in it
    assert outside.kind == "execute" and outside.title == (
        "`make release` — would run OUTSIDE the sandbox, with all your rights; "
        "the model's reason: writes outside the folder"
    )
    assert "not offered" in outside.content[-1].content.text  # the request's own text agrees with its options


async def test_issue_42_titles_put_the_command_and_the_path_first_live_and_on_load(acp, folder):
    sid = await new(acp, folder)
    acp.fake.push(command_call("call_x1", "echo one:two"), write_call("call_w1", "notes/b.txt"), {"content": "ok"})
    acp.editor.decide = lambda request: "allow_once"
    await acp.prompt(sid, "run and write")
    live = {u.tool_call_id: u.title for u in acp.editor.of(sid, "tool_call")}
    # issue 51: a command in backticks, which CodeCompanion shows whole (its text before a ":" otherwise)
    assert live == {"call_x1": "`echo one:two`", "call_w1": "notes/b.txt (write_file)"}
    assert [p.title for p in acp.editor.permissions] == ["`echo one:two`", "notes/b.txt (write_file)"]
    acp.editor.updates.clear()
    await acp.conn.load_session(session_id=sid, cwd=str(folder), mcp_servers=[])
    replayed = {u.tool_call_id: u.title for u in acp.editor.of(sid, "tool_call")}
    assert replayed == live


async def test_issue_42_the_approval_policy_is_a_mode_config_option_without_models(acp, folder):
    created = await acp.conn.new_session(cwd=str(folder), mcp_servers=[])
    options = {o.id: o for o in (getattr(o, "root", o) for o in created.config_options)}
    assert set(options) == {"mode", "sandbox"}  # no [models.NAME] here: no model picker, the policy all the same
    mode = options["mode"]
    assert mode.category == "mode" and [o.value for o in mode.options] == ["ask", "autoEdit", "auto", "plan"]
    auto_edit = next(o for o in mode.options if o.value == "autoEdit")
    assert "sandboxed commands without asking" in auto_edit.description
    answer = await acp.conn.set_config_option(session_id=created.session_id, config_id="mode", value="auto")
    assert next(getattr(o, "root", o) for o in answer.config_options).current_value == "auto"
    told = acp.editor.of(created.session_id, "current_mode_update")
    assert told and told[-1].current_mode_id == "auto"
    assert created.modes.current_mode_id != "auto"  # it changed, for the client that uses the legacy modes too


async def test_issue_42_avantes_wrapped_prompt_titles_the_session_and_an_unprompted_one_is_not_listed(acp, folder):
    idle = await new(acp, folder)  # a sidebar opened and never used
    sid = await new(acp, folder)
    acp.fake.push({"content": "written"})
    await acp.prompt(sid, "<previous_user_message>Write b.txt</previous_user_message>")
    [told] = acp.editor.of(sid, "session_info_update")
    assert told.title == "Write b.txt"
    listed = {s.session_id: s.title for s in (await acp.conn.list_sessions(cwd=str(folder))).sessions}
    assert listed[sid] == "Write b.txt"
    assert idle not in listed and "New session" not in listed.values()
