"""ACP resource links and embedded resources are attached as ``submitTurn`` context is: checked against
the session folder, stored in the user message; every message the agent sends valid per the official schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import embedded_text_resource, resource_block, resource_link_block, text_block

from tests.acp.support import acp_fixture, fresh_fixture, new

pytestmark = pytest.mark.asyncio(loop_scope="module")

acp = acp_fixture()
fresh = fresh_fixture()


async def user_text(acp, folder: Path, blocks: list) -> str:
    acp.fake.push({"content": "seen"})
    sid = await new(acp, folder)
    assert (await acp.conn.prompt(session_id=sid, prompt=blocks)).stop_reason == "end_turn"
    user = [m for m in acp.fake.requests[-1]["body"]["messages"] if m["role"] == "user"][-1]
    content = user["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


async def test_issue34_resource_links_and_embedded_resources_attach_like_submitTurn_context(acp, tmp_path):
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "a.py").write_text("A = 1\n")
    (tmp_path / "outside.txt").write_text("OUTSIDE-8812")
    text = await user_text(
        acp,
        folder,
        [
            text_block("look"),
            resource_link_block("a.py", (folder / "a.py").as_uri()),
            resource_block(embedded_text_resource((folder / "b.py").as_uri(), "B = 'unsaved'")),
            resource_link_block("outside", (tmp_path / "outside.txt").as_uri()),
        ],
    )
    assert text.startswith("look\n\n")
    assert '<context kind="file" path="a.py">\nA = 1\n' in text
    assert '<context kind="selection" path="b.py">\nB = \'unsaved\'\n</context>' in text
    assert "OUTSIDE-8812" not in text and "outside.txt is outside the session folder" in text
