"""Editor grounding, server side, through the real server with an editor-like client answering the
``editor/*`` requests: tools offered only when advertised, 1-based for the model and 0-based on the wire, paths
kept inside the session folder, the editor's failures as clear tool results, diagnostics after edits."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from server.context.failures import is_failure
from tests.e2e.agent_support import API_KEY, Agent, closing, new_fake, request_tools, start_agent, tool_messages
from tests.e2e.editor_support import ALL, Editor, start_editor_agent

pytestmark = pytest.mark.asyncio(loop_scope="module")

EDITOR_TOOLS = {"get_diagnostics", "find_definition", "find_references", "workspace_symbols"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory) -> AsyncIterator[tuple[Agent, Editor]]:
    work = tmp_path_factory.mktemp("work")
    editor = Editor([work])
    with new_fake(api_key=API_KEY) as fake:
        async with closing(
            start_editor_agent(tmp_path_factory.mktemp("home"), fake, editor, {**ALL, "settleMs": 300})
        ) as agent:
            agent.work = work  # type: ignore[attr-defined]
            yield agent, editor


@pytest.fixture
def agent(world, tmp_path):
    agent, editor = world
    agent.fake.reset()
    editor.asked.clear()
    editor.extra.clear()
    editor.fail, editor.hang = None, False
    editor.roots[:] = [tmp_path]
    return agent


@pytest.fixture
def editor(world):
    return world[1]


def call(name: str, **arguments) -> dict:
    return {"tool_calls": [{"id": f"call_{name}", "name": name, "arguments": arguments}]}


def names(record) -> set[str]:
    return {t["function"]["name"] for t in request_tools(record)}


async def result_of(agent: Agent, folder, *calls: dict) -> list[str]:
    agent.fake.push(*calls, {"content": "done"})
    sid = await agent.session(folder, policy="autoEdit")
    assert (await agent.turn(sid, "go"))["stopReason"] == "endTurn"
    return [m["content"] for m in tool_messages(agent.chat_requests()[-1])]


def lib(folder):
    (folder / "lib.py").write_text("import os\n\n\ndef helper(x):\n    return x\n")
    (folder / "main.py").write_text("from lib import helper\n\nprint(helper(1))\nprint(helper(2))\n")


async def test_issue34_tools_offered_when_advertised_with_1_based_positions_on_a_0_based_wire(agent, editor, tmp_path):
    lib(tmp_path)
    [text] = await result_of(agent, tmp_path, call("find_definition", path="main.py", line=3, column=8))
    assert names(agent.chat_requests()[0]) >= EDITOR_TOOLS
    [(method, params)] = editor.asked
    assert method == "editor/definition"
    assert params == {"uri": (tmp_path / "main.py").as_uri(), "position": {"line": 2, "character": 7}}
    assert text == "1 definition:\nlib.py:4:5\n    def helper(x):"


async def test_issue34_references_and_symbols_listed_with_a_source_line(agent, editor, tmp_path):
    lib(tmp_path)
    texts = await result_of(
        agent,
        tmp_path,
        call("find_references", path="lib.py", line=4, column=6),
        call("workspace_symbols", query="help"),
    )
    assert texts[0].splitlines() == [
        "3 references:",
        "lib.py:4:5",
        "    def helper(x):",
        "main.py:3:7",
        "    print(helper(1))",
        "main.py:4:7",
        "    print(helper(2))",
    ]
    assert texts[1] == "1 symbol matching 'help':\n? (function) lib.py:4:5"


async def test_issue34_get_diagnostics_lists_the_session_files_only(agent, editor, tmp_path):
    (tmp_path / "bad.py").write_text("x = 1\ny = undefined_name()\n# TODO later\n")
    editor.extra.append({"uri": "file:///etc/elsewhere.py", "range": rng0(), "severity": 1, "message": "secret"})
    [everything] = await result_of(agent, tmp_path, call("get_diagnostics"))
    assert editor.asked == [("editor/diagnostics", {})]
    assert everything.splitlines() == [
        "2 problems (1 error, 1 warning):",
        "bad.py:2:5 error: undefined name 'undefined_name' [tinylint]",
        "    y = undefined_name()",
        "bad.py:3:1 warning: a TODO",
        "    # TODO later",
    ]
    assert "secret" not in everything


def rng0() -> dict:
    return {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}


async def test_issue34_paths_outside_the_session_folder_are_refused_without_asking(agent, editor, tmp_path):
    texts = await result_of(
        agent,
        tmp_path,
        call("find_definition", path="/etc/passwd", line=1, column=1),
        call("get_diagnostics", path="../elsewhere.py"),
    )
    assert all(t.startswith("Permission denied") for t in texts), texts
    assert editor.asked == []


async def test_issue34_an_editor_error_is_a_clear_tool_result_not_a_failed_turn(agent, editor, tmp_path):
    lib(tmp_path)
    editor.fail = "no language server for python"
    [text] = await result_of(agent, tmp_path, call("find_references", path="lib.py", line=4, column=6))
    assert text == "Tool failed: the editor could not answer editor/references: no language server for python"


async def test_issue34_diagnostics_the_edit_introduced_are_appended_and_count_as_a_failure(agent, editor, tmp_path):
    (tmp_path / "app.py").write_text("a = undefined_name\nb = 2\n")  # an error there before the edit
    [edit] = await result_of(
        agent, tmp_path, call("edit_file", path="app.py", old_string="b = 2", new_string="b = undefined_name")
    )
    tail = edit.split("\n\n")[-1].splitlines()
    assert tail == [
        "Editor diagnostics introduced by this edit (1 error):",
        "app.py:2:5 error: undefined name 'undefined_name' [tinylint]",
        "    b = undefined_name",
    ]
    assert [m for m, _ in editor.asked][:2] == ["editor/diagnostics", "editor/diagnostics"]
    assert is_failure(edit, "edit_file", "ok")

    [clean] = await result_of(agent, tmp_path, call("write_file", path="ok.py", content="x = 1\n"))
    assert "Editor diagnostics" not in clean and not is_failure(clean, "write_file", "ok")


def edit(call_id: str, path: str, old: str, new: str) -> dict:
    arguments = {"path": path, "old_string": old, "new_string": new}
    return {"tool_calls": [{"id": call_id, "name": "edit_file", "arguments": arguments}]}


async def test_B_SUM_10_an_editor_error_a_later_edit_fixed_is_not_in_the_summary(agent, editor, tmp_path):
    """Introduced diagnostics count as failures while they persist; the compaction after a fix drops
    them, and keeps the ones another file still has."""
    (tmp_path / "app.py").write_text("a = 1\nb = 2\n")
    (tmp_path / "other.py").write_text("c = 3\n")
    sid = await agent.session(tmp_path, policy="autoEdit")
    agent.fake.push(
        edit("e1", "app.py", "b = 2", "b = undefined_name"),
        edit("e2", "other.py", "c = 3", "c = undefined_name"),
        {"content": "broke both"},
        edit("e3", "app.py", "b = undefined_name", "b = 2"),
        {"content": "fixed app.py"},
        *({"content": f"answer {i}: " + "detail " * 300} for i in range(3)),
    )
    for goal in ("break them", "fix app.py", *(f"goal {i}: " + "x " * 200 for i in range(3))):
        assert (await agent.turn(sid, goal))["stopReason"] == "endTurn"
    [fixed] = [m["content"] for m in tool_messages(agent.chat_requests()[4]) if m["tool_call_id"] == "e3"]
    assert "Editor diagnostics resolved by this edit (1 error; no errors or warnings remain in this file):" in fixed
    assert not is_failure(fixed, "edit_file", "ok")
    result = await agent.client.request("compactSession", {"sessionId": sid})
    assert result["compacted"] is True and result["mode"] == "summarized"
    failures = result["summary"].split("Failures to avoid:\n", 1)[1].split("\nLast useful", 1)[0]
    assert "other.py" in failures and "undefined name" in failures  # still there: kept
    assert "app.py" not in failures  # fixed by e3: no longer a failure to avoid


async def test_issue34_a_client_that_advertises_nothing_gets_no_tools_and_no_requests(tmp_path):
    with new_fake(api_key=API_KEY) as fake:
        agent = await start_agent(tmp_path / "home", fake)
        asked: list[str] = []

        def answer(method: str, params: dict) -> dict:
            asked.append(method)
            return {"decision": "allowOnce"}

        agent.client.on_request = answer
        try:
            (tmp_path / "w").mkdir()
            texts = await result_of(agent, tmp_path / "w", call("write_file", path="a.py", content="undefined_name\n"))
            assert not EDITOR_TOOLS & names(agent.chat_requests()[0])
            assert asked == [] and "Editor diagnostics" not in texts[0]
        finally:
            await agent.client.close()


async def test_issue34_only_the_advertised_tools_and_a_timeout_reads_as_a_tool_failure(tmp_path):
    (tmp_path / "w").mkdir()
    lib(tmp_path / "w")
    editor = Editor([tmp_path / "w"])
    editor.hang = True
    with new_fake(api_key=API_KEY) as fake:
        async with closing(
            start_editor_agent(tmp_path / "home", fake, editor, {"definition": True}, THREADLINE_EDITOR_TIMEOUT="1")
        ) as agent:
            texts = await result_of(
                agent,
                tmp_path / "w",
                call("find_definition", path="main.py", line=3, column=8),
                call("write_file", path="b.py", content="undefined_name\n"),
            )
            assert names(agent.chat_requests()[0]) & EDITOR_TOOLS == {"find_definition"}
            assert texts[0] == "Tool failed: the editor did not answer editor/definition within 1 s"
            assert [m for m, _ in editor.asked] == ["editor/definition"]  # no diagnostics: not advertised


async def test_B_SBX_1_the_editor_tools_honour_deny_read_as_the_file_tools_do(tmp_path):
    """The session folder is the user's home, and ``~/.ssh`` (in the default deny_read) holds Python the editor's
    language server indexes: asked at a position there, the tool refuses without asking the editor; found by a
    search, the hidden file is left out (its name and its source line), as it is for ``read_file``."""
    home = tmp_path / "w"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "keys.py").write_text("def helper_key():\n    return 'PRIVATE-KEY-MATERIAL'\n")
    (home / "app.py").write_text("def helper_app():\n    return 1\n")
    editor = Editor([home])
    with new_fake(api_key=API_KEY) as fake:
        async with closing(start_editor_agent(tmp_path / "data", fake, editor, ALL, HOME=str(home))) as agent:
            texts = await result_of(
                agent,
                home,
                call("find_definition", path=".ssh/keys.py", line=1, column=5),
                call("workspace_symbols", query="helper"),
                call("get_diagnostics", path=".ssh/keys.py"),
            )
    assert texts[0].startswith("Permission denied") and texts[2].startswith("Permission denied"), texts
    assert texts[1] == "1 symbol matching 'helper':\n? (function) app.py:1:5", texts[1]
    assert [m for m, _ in editor.asked] == ["editor/workspaceSymbols"]  # the refused ones never reached the editor
    assert not any("PRIVATE-KEY" in t or "keys.py" in t for t in texts[1:2])
