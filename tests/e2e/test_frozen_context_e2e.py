"""The frozen session context, end to end through submitTurn with the model-service double (R-FRZ-1, R-FRZ-2,
R-SUM-5, R-FALL-1 ordering).

Every test starts the real server on a temp ``THREADLINE_HOME`` and a real project folder, and reads what reached
the provider from the double's request log.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from server.cli.client import Client
from server.project.prompt import SYSTEM_PROMPT
from tests.harness import running_client


def system_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["body"]["messages"] if m["role"] == "system"]


def notices(client) -> list[str]:
    return [
        p["update"]["message"]
        for m, p in client.notifications
        if m == "sessionUpdate" and p["update"]["kind"] == "notice"
    ]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root / "AGENTS.md", "Root rules. MARKER-ROOT-AGENTS\n")
    write(root / ".threadline" / "AGENTS.md", "Folder rules. MARKER-DOT-AGENTS\n")
    write(
        root / ".threadline" / "project.json",
        json.dumps({"validation": {"commands": ["pytest -q MARKER-VALIDATION"], "requiredBeforeDone": True}}),
    )
    write(
        root / ".threadline" / "skills" / "deploy" / "SKILL.md",
        "---\nname: deploy-helper\ndescription: MARKER-PROJECT-SKILL how to deploy\n---\nSecret body MARKER-BODY\n",
    )
    write(root / ".threadline" / "memory.md", "- MARKER-PROJECT-MEMORY\n")
    return root


@pytest.fixture
def user_home(home: Path) -> Path:
    write(home / "memory.md", "- MARKER-USER-MEMORY\n")
    write(home / "skills" / "review" / "SKILL.md", "---\nname: review\ndescription: MARKER-USER-SKILL\n---\nbody\n")
    return home


def start(home: Path, fake) -> contextlib.AbstractAsyncContextManager[Client]:
    """A server on ``home`` talking to ``fake``, for an ``async with`` block."""
    return running_client(home, THREADLINE_BASE_URL=fake.url, THREADLINE_MODEL="fake-model")


async def first_turn_notices(home: Path, fake, cwd: Path) -> list[str]:
    """Start a server, run a new session's first turn in ``cwd``, return the notices it sent."""
    async with start(home, fake) as client:
        await new_turn(client, cwd)
        return notices(client)


async def new_turn(client, cwd: Path, text: str = "hello") -> str:
    sid = (await client.request("createSession", {"cwd": str(cwd)}))["sessionId"]
    result = await client.request("submitTurn", {"sessionId": sid, "text": text})
    assert result["stopReason"] == "endTurn", result
    return sid


async def test_R_FRZ_1_every_source_reaches_the_first_request_in_order(user_home, project, fake_provider):
    async with start(user_home, fake_provider) as client:
        await new_turn(client, project)
    texts = system_texts(fake_provider.requests[-1])
    assert texts[0] == SYSTEM_PROMPT
    # R-FALL-1 keeps the first two system messages: the prompt, then the project's instructions (both files).
    assert "MARKER-ROOT-AGENTS" in texts[1] and "MARKER-DOT-AGENTS" in texts[1]
    assert texts[1].index("MARKER-ROOT-AGENTS") < texts[1].index("MARKER-DOT-AGENTS")
    joined = "\n".join(texts)
    for marker in (
        "MARKER-VALIDATION",
        "MARKER-PROJECT-SKILL",
        "MARKER-USER-SKILL",
        "MARKER-USER-MEMORY",
        "MARKER-PROJECT-MEMORY",
    ):
        assert marker in joined, marker
    assert "MARKER-BODY" not in joined, "only the skill catalog is injected, never a skill's body"
    assert "Run them and make them pass before you say the task is done." in joined


async def test_R_FRZ_1_frozen_context_is_persisted_as_system_messages(user_home, project, fake_provider):
    async with start(user_home, fake_provider) as client:
        sid = await new_turn(client, project)
        items = (await client.request("readTranscript", {"sessionId": sid}))["items"]
    stored = [i["content"] for i in items if i["role"] == "system"]
    assert stored == system_texts(fake_provider.requests[-1])
    assert items[len(stored)]["role"] == "user", "the frozen context comes before the first user message"


async def test_R_FRZ_2_edits_mid_session_reach_only_new_sessions(user_home, project, fake_provider):
    async with start(user_home, fake_provider) as client:
        old = await new_turn(client, project)
        write(project / "AGENTS.md", "Root rules. MARKER-EDITED-AGENTS\n")
        write(user_home / "memory.md", "- MARKER-EDITED-MEMORY\n")
        await client.request("submitTurn", {"sessionId": old, "text": "again"})
        same_session = "\n".join(system_texts(fake_provider.requests[-1]))
        await new_turn(client, project)
        new_session = "\n".join(system_texts(fake_provider.requests[-1]))
    assert "MARKER-ROOT-AGENTS" in same_session and "MARKER-EDITED-AGENTS" not in same_session
    assert "MARKER-USER-MEMORY" in same_session and "MARKER-EDITED-MEMORY" not in same_session
    assert "MARKER-EDITED-AGENTS" in new_session and "MARKER-EDITED-MEMORY" in new_session


async def test_R_FRZ_1_missing_files_are_skipped_silently(home, tmp_path, fake_provider):
    empty = tmp_path / "empty"
    empty.mkdir()
    found = await first_turn_notices(home, fake_provider, empty)
    assert system_texts(fake_provider.requests[-1]) == [SYSTEM_PROMPT]
    assert found == []


async def test_R_FRZ_1_unreadable_and_invalid_sources_give_notices_and_the_session_starts(
    home, tmp_path, fake_provider
):
    root = tmp_path / "broken"
    (root / "AGENTS.md").mkdir(parents=True)  # a folder where a file should be: unreadable as a file
    write(root / ".threadline" / "project.json", "{not json")
    write(root / ".threadline" / "memory.md", "ok MARKER-STILL-READ\n")
    found = await first_turn_notices(home, fake_provider, root)
    assert any("AGENTS.md" in n for n in found), found
    assert any("project.json is not valid JSON" in n for n in found), found
    assert "MARKER-STILL-READ" in "\n".join(system_texts(fake_provider.requests[-1]))


async def test_R_FRZ_1_unknown_project_keys_give_a_notice_and_known_ones_apply(home, tmp_path, fake_provider):
    root = tmp_path / "extra"
    write(
        root / ".threadline" / "project.json",
        json.dumps({"validation": {"commands": ["make check"], "colour": "blue"}, "theme": 1}),
    )
    found = await first_turn_notices(home, fake_provider, root)
    assert any("theme" in n and "validation.colour" in n for n in found), found
    assert "make check" in "\n".join(system_texts(fake_provider.requests[-1]))


async def test_R_FRZ_1_a_2MB_AGENTS_md_is_cut_with_a_visible_marker(home, tmp_path, fake_provider):
    root = tmp_path / "huge"
    write(root / "AGENTS.md", "HEAD-MARKER\n" + "rule line that repeats\n" * 95_000 + "TAIL-MARKER\n")
    found = await first_turn_notices(home, fake_provider, root)
    agents = system_texts(fake_provider.requests[-1])[1]
    assert "HEAD-MARKER" in agents and "TAIL-MARKER" not in agents
    assert "truncated by Threadline" in agents and len(agents) < 40_000
    assert any("AGENTS.md has" in n for n in found), found


async def test_R_FRZ_2_save_memory_writes_the_file_and_only_the_next_session_sees_it(home, tmp_path, fake_provider):
    root = tmp_path / "mem"
    root.mkdir()
    fake_provider.push(
        {
            "tool_calls": [
                {
                    "id": "call_m",
                    "name": "save_memory",
                    "arguments": {"scope": "project", "text": "The build uses MARKER-SAVED"},
                }
            ]
        },
        {"content": "noted"},
    )
    async with running_client(
        home, THREADLINE_BASE_URL=fake_provider.url, THREADLINE_MODEL="fake-model", THREADLINE_APPROVAL_POLICY="auto"
    ) as client:
        sid = await new_turn(client, root, "remember the build")
        tool_result = [m for m in fake_provider.requests[-1]["body"]["messages"] if m["role"] == "tool"][-1]
        await client.request("submitTurn", {"sessionId": sid, "text": "next"})
        same_session = "\n".join(system_texts(fake_provider.requests[-1]))
        await new_turn(client, root)
        next_session = "\n".join(system_texts(fake_provider.requests[-1]))
    assert "MARKER-SAVED" in (root / ".threadline" / "memory.md").read_text()
    assert "takes effect in new sessions" in tool_result["content"]
    assert "MARKER-SAVED" not in same_session
    assert "MARKER-SAVED" in next_session


async def test_R_FRZ_1_a_user_skill_outside_the_folder_is_readable_by_read_file(user_home, project, fake_provider):
    skill = user_home / "skills" / "review" / "SKILL.md"
    fake_provider.push(
        {"tool_calls": [{"id": "call_s", "name": "read_file", "arguments": {"path": str(skill)}}]},
        {"content": "read it"},
    )
    async with start(user_home, fake_provider) as client:
        await new_turn(client, project)
    result = [m for m in fake_provider.requests[-1]["body"]["messages"] if m["role"] == "tool"][-1]
    assert "MARKER-USER-SKILL" in result["content"]


async def test_R_SUM_5_the_summary_path_keeps_every_frozen_system_message(user_home, project, fake_provider):
    async with start(user_home, fake_provider) as client:
        sid = await new_turn(client, project, "first task " + "details " * 400)
        for i in range(6):
            await client.request("submitTurn", {"sessionId": sid, "text": f"step {i} " + "more words " * 400})
        frozen = system_texts(fake_provider.requests[-1])
        view = await client.request(
            "getContextView", {"sessionId": sid, "contextWindowTokens": 6000, "keepRecentTokens": 600}
        )
    assert view["mode"] == "summarized", view["mode"]
    systems = [m["content"] for m in view["messages"] if m["role"] == "system"]
    assert systems[: len(frozen)] == frozen
    assert systems[len(frozen)].startswith("[compressed conversation context]")
