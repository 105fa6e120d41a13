"""What CodeCompanion.nvim and avante.nvim showed in issue 51, performed with the official SDK's client against a
real ``threadline acp`` process (every agent message checked against the ACP schema after each test):

- a subagent's edit is asked with the same diff block as the parent's own, and its progress lists its calls titled
  as the parent's are;
- avante's wrapped prompt is stored once: the earlier messages it repeats are not stored again, its context line
  is kept after the user's words and left out when the session is loaded;
- a prompt sent while a turn runs is queued (and says so) instead of failing with ``TurnAlreadyRunning``;
- ``initialize`` is answered before the agent has loaded (a broken config.toml stops it only afterwards), with
  exactly the agent's own answer.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from server.acp.agent import ThreadlineAgent
from server.acp_doorman import early_answer
from tests.acp.support import acp_fixture, command_call, fresh_fixture, new, write_call
from tests.harness import REPO, server_env

pytestmark = pytest.mark.asyncio(loop_scope="module")

acp = acp_fixture()
fresh = fresh_fixture()


def task(call_id: str, description: str, prompt: str) -> dict:
    return {
        "tool_calls": [{"id": call_id, "name": "task", "arguments": {"description": description, "prompt": prompt}}]
    }


def said(acp, sid: str) -> str:
    return "".join(u.content.text for u in acp.editor.of(sid, "agent_message_chunk"))


async def test_B_ACP_1_a_subagents_write_is_asked_with_the_same_diff_as_the_parents(acp, folder):
    sid = await new(acp, folder)
    acp.fake.push(
        task("call_t1", "Write the notes", "write notes.txt"),
        write_call("call_w1", "notes.txt", "fresh\n"),
        command_call("call_c1", "echo time: now"),
        {"content": "written"},
        {"content": "done"},
    )
    assert (await acp.prompt(sid, "delegate the notes")).stop_reason == "end_turn"
    write, command = acp.editor.permissions
    diff, note = write.content
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == (
        "diff",
        str((folder / "notes.txt").resolve()),
        None,
        "fresh\n",
    )
    assert (write.tool_call_id, write.kind, write.title) == ("call_t1", "edit", "notes.txt (write_file)")
    assert note.content.text.startswith("A subagent asks to change notes.txt (write_file)")
    assert (
        command.title == "`echo time: now`"
        and "A subagent asks to run `echo time: now`" in command.content[0].content.text
    )
    progress = [u for u in acp.editor.of(sid, "tool_call_update") if u.tool_call_id == "call_t1" and u.content]
    log = progress[-2].content[0].content.text  # the last is the task's result
    assert "- notes.txt (write_file)\n" in log and "- `echo time: now`" in log and "run_command:" not in log


async def test_B_ACP_1_avantes_wrapped_prompt_is_stored_once_and_its_context_line_apart(acp, folder):
    sid = await new(acp, folder)
    acp.fake.push({"content": "b.txt it is"}, {"content": "read"})
    await acp.prompt(sid, "Write b.txt")
    wrapped = (
        "<previous_user_message>Write b.txt</previous_user_message>\n"
        "<previous_user_message>A request from before this session</previous_user_message>\n"
        "<system_context>Current file: lua/init.lua</system_context>\n"
        "Now read it back"
    )
    await acp.prompt(sid, wrapped)
    sent = acp.fake.requests[-1]["body"]["messages"]
    users = [m["content"] for m in sent if m["role"] == "user"]
    assert sum("Write b.txt" in u for u in users) == 1  # the repeat was not stored again
    assert users[-1] == (
        "<previous_user_message>A request from before this session</previous_user_message>\n"
        "Now read it back\n\n<system_context>Current file: lua/init.lua</system_context>"
    )
    acp.editor.updates.clear()
    await acp.conn.load_session(session_id=sid, cwd=str(folder), mcp_servers=[])
    shown = [u.content.text for u in acp.editor.of(sid, "user_message_chunk")]
    assert shown[-1].endswith("Now read it back") and "system_context" not in shown[-1]


async def test_B_ACP_1_a_prompt_sent_while_a_turn_runs_is_queued_and_says_so(acp, folder):
    sid = await new(acp, folder)
    acp.fake.push(command_call("call_q1", "echo first"), {"content": "first done"}, {"content": "second done"})
    acp.editor.hold = True  # the first turn waits on its approval: it runs while the second prompt comes
    first = asyncio.ensure_future(acp.prompt(sid, "run the first"))
    await asyncio.wait_for(acp.editor.asked.wait(), 30)
    second = asyncio.ensure_future(acp.prompt(sid, "and then this"))
    await acp.wait_for(lambda: "queued" in said(acp, sid), timeout=30)
    acp.editor.release.set()
    assert (await first).stop_reason == "end_turn"
    assert (await second).stop_reason == "end_turn"  # not -32602 TurnAlreadyRunning
    assert "(queued: a turn is running in this session; this message runs when it ends)" in said(acp, sid)
    assert said(acp, sid).endswith("second done")


async def test_B_ACP_1_initialize_is_answered_before_the_agent_loads_and_is_the_agents_own(home, tmp_path):
    """A broken config.toml stops the agent once it loads its settings; ``initialize`` was answered before."""
    (home / "config.toml").write_text("[provider\n")
    done = subprocess.run(
        [sys.executable, "-m", "server", "acp"],
        input='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n',
        env=server_env(home),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    [line] = done.stdout.splitlines()
    assert json.loads(line) == {"jsonrpc": "2.0", "id": 1, "result": await own_answer()}
    assert done.returncode == 2 and "config.toml" in done.stderr and "Traceback" not in done.stderr


async def own_answer() -> dict:
    """``ThreadlineAgent.initialize``'s answer as the SDK writes it (``acp.connection``'s dump options)."""
    answer = await ThreadlineAgent.initialize(None, protocol_version=1)  # type: ignore[arg-type]
    return answer.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


async def test_B_ACP_1_the_early_answer_is_the_agents_and_only_for_a_well_formed_initialize():
    line = early_answer(b'{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":1}}')
    assert line is not None and json.loads(line) == {"jsonrpc": "2.0", "id": "a", "result": await own_answer()}
    for other in (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',  # the agent says what is missing
        b'{"jsonrpc":"2.0","id":true,"method":"initialize","params":{"protocolVersion":1}}',
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/"}}',
        b"not json",
    ):
        assert early_answer(other) is None


async def test_B_ACP_1_cancel_answers_the_running_and_the_queued_prompt_cancelled(acp, folder):
    sid = await new(acp, folder)
    acp.fake.push(command_call("call_q2", "echo held"), {"content": "never"}, {"content": "never either"})
    acp.editor.hold = True
    first = asyncio.ensure_future(acp.prompt(sid, "run it"))
    await asyncio.wait_for(acp.editor.asked.wait(), 30)
    second = asyncio.ensure_future(acp.prompt(sid, "then this"))
    await acp.wait_for(lambda: "queued" in said(acp, sid), timeout=30)
    await acp.conn.cancel(session_id=sid)
    acp.editor.decide = lambda request: None  # the client answers its open question `cancelled`, as ACP asks
    acp.editor.release.set()
    assert (await first).stop_reason == "cancelled"
    assert (await second).stop_reason == "cancelled"  # not run after the cancelled one
