"""Named agent files for the ``task`` tool (B-SUB-1): where they are read from and what their front matter means."""

from __future__ import annotations

from pathlib import Path

from server.agent.definitions import load_agents
from server.services.subagents import describe


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_B_SUB_1_user_and_project_agents_the_project_wins(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "ws"
    write(home / "agents" / "scout.md", "---\ndescription: user scout\n---\nuser body\n")
    write(home / "agents" / "critic.md", "---\ndescription: reviews\nmodel: small\n---\nBe harsh.\n")
    write(
        cwd / ".threadline" / "agents" / "scout.md",
        "---\ndescription: project scout\ntools: read_file,  list_files\n---\nproject body\n",
    )
    catalog = load_agents(cwd, home)
    assert sorted(catalog.agents) == ["critic", "scout"]
    scout, critic = catalog.agents["scout"], catalog.agents["critic"]
    assert scout.description == "project scout" and scout.instructions == "project body"
    assert scout.tools == frozenset({"read_file", "list_files"}) and scout.model is None
    assert critic.tools is None and critic.model == "small" and critic.instructions == "Be harsh."
    assert "- scout: project scout" in describe(catalog) and "- critic: reviews" in describe(catalog)


def test_B_SUB_1_an_agent_without_a_description_or_outside_its_folder_is_skipped_with_a_notice(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "ws"
    write(cwd / ".threadline" / "agents" / "bare.md", "no front matter\n")
    (tmp_path / "secret.md").write_text("---\ndescription: stolen\n---\nsecret\n")
    (cwd / ".threadline" / "agents" / "link.md").symlink_to(tmp_path / "secret.md")
    catalog = load_agents(cwd, home)
    assert catalog.agents == {}
    assert any("bare.md has no description" in n for n in catalog.notices)
    assert any("link.md points outside" in n for n in catalog.notices)
