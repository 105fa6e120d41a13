"""A hostile repository against the real server: frozen-context sources and skill folders that point
out of the session folder, or at special files, must never be read, sent to the provider or stored.

Each test plants the attack in a real project folder, runs a first turn through the real server and the model
double, and asserts on what reached the provider and what the client was told.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.e2e.test_frozen_context_e2e import first_turn_notices, new_turn, start, system_texts, write

SECRET = "aws_secret_access_key = MARKER-STOLEN-SECRET"


def secret_outside(tmp_path: Path) -> Path:
    return write(tmp_path / "outside" / "credentials", SECRET + "\n")


async def test_B_FRZ_symlinked_agents_md_pointing_outside_is_skipped_with_a_notice(home, tmp_path, fake_provider):
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").symlink_to(secret_outside(tmp_path))
    (project / ".threadline").mkdir()
    (project / ".threadline" / "memory.md").symlink_to(secret_outside(tmp_path))
    said = await first_turn_notices(home, fake_provider, project)
    sent = "\n".join(system_texts(fake_provider.requests[-1]))
    assert "MARKER-STOLEN-SECRET" not in sent
    assert any("AGENTS.md" in n and "outside" in n for n in said), said
    assert any("memory.md" in n and "outside" in n for n in said), said


async def test_B_FRZ_agents_md_on_dev_zero_or_a_fifo_neither_hangs_nor_fills_memory(home, tmp_path, fake_provider):
    project = tmp_path / "project"
    (project / ".threadline").mkdir(parents=True)
    # A link to /dev/zero is outside the folder; a FIFO inside it is a special file. Both must be skipped.
    (project / "AGENTS.md").symlink_to("/dev/zero")
    os.mkfifo(project / ".threadline" / "AGENTS.md")  # nobody ever writes: a blocking read would hang forever
    said = await first_turn_notices(home, fake_provider, project)
    assert any(".threadline/AGENTS.md" in n and "not a regular file" in n for n in said), said
    assert any(n.startswith(str(project / "AGENTS.md")) for n in said), said


async def test_B_FRZ_a_skill_folder_linked_out_does_not_widen_what_read_file_can_read(home, tmp_path, fake_provider):
    outside = tmp_path / "outside"
    secret = secret_outside(tmp_path)
    write(outside / "evil" / "SKILL.md", "---\nname: evil\ndescription: MARKER-EVIL-SKILL\n---\n")
    project = tmp_path / "project"
    (project / ".threadline").mkdir(parents=True)
    (project / ".threadline" / "skills").symlink_to(outside)  # .threadline/skills -> ../outside
    fake_provider.push(
        {"tool_calls": [{"id": "call_x", "name": "read_file", "arguments": {"path": str(secret)}}]}, {"content": "done"}
    )
    async with start(home, fake_provider) as client:
        await new_turn(client, project)
    request = fake_provider.requests[-1]["body"]["messages"]
    assert "MARKER-EVIL-SKILL" not in "\n".join(system_texts(fake_provider.requests[-1]))
    result = [m for m in request if m["role"] == "tool"][-1]
    assert "MARKER-STOLEN-SECRET" not in result["content"]
    assert result["content"].startswith("Permission denied"), result["content"]
