"""B-SBX-1/3 as pure logic: the policy a mode makes, the settings that choose it, and the denial note."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.config import load_settings
from server.config_file import ConfigError
from server.sandbox.denials import denial_note
from server.sandbox.policy import SandboxPolicy, build_policy


def test_B_SBX_1_modes_make_the_policy(tmp_path: Path):
    ws, tmp = tmp_path / "ws", tmp_path / "tmp"
    ws.mkdir()
    tmp.mkdir()
    write = build_policy("workspace-write", ws, tmp, writable_roots=(str(tmp_path / "extra"),))
    assert write.writable == (str(tmp), str(ws), str(tmp_path / "extra"))
    assert set(write.read_only) >= {str(ws / ".git"), str(ws / ".threadline")}
    assert build_policy("read-only", ws, tmp).writable == (str(tmp),)
    with pytest.raises(ValueError, match="sandbox mode"):
        build_policy("yolo", ws, tmp)
    assert SandboxPolicy.from_json(write.to_json()) == write


def test_B_SBX_1_a_deny_read_path_holding_the_folder_is_left_visible_and_said(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = build_policy("workspace-write", ws, tmp_path, deny_read=(str(tmp_path), str(tmp_path / "other")))
    assert policy.deny_read == (str(tmp_path / "other"),)
    assert "holds the session folder" in policy.skipped[0]


def test_B_SBX_1_settings_from_config_env_and_defaults(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"THREADLINE_HOME": str(home), "HOME": str(tmp_path / "u")}
    s = load_settings(env).sandbox
    assert s.mode == "workspace-write" and s.network is False
    assert s.deny_read == (
        *(str(tmp_path / "u" / n) for n in [".ssh", ".aws", ".gnupg", ".config/gcloud"]),
        str(tmp_path / "u" / ".netrc"),
        str(home),
    )
    (home / "config.toml").write_text(
        '[sandbox]\nmode = "read-only"\nnetwork = true\nwritable_roots = ["/srv/cache"]\ndeny_read = ["~/.kube"]\n'
    )
    s = load_settings(env).sandbox
    assert (s.mode, s.network, s.writable_roots) == ("read-only", True, ("/srv/cache",))
    assert s.deny_read == ("~/.kube", str(home))  # the data folder stays hidden whatever the list says
    agent = str(tmp_path / "agent.sock")
    assert load_settings({**env, "SSH_AUTH_SOCK": agent}).sandbox.deny_read == ("~/.kube", str(home), agent)
    assert load_settings({**env, "THREADLINE_SANDBOX": "off"}).sandbox.mode == "off"
    with pytest.raises(ConfigError, match="THREADLINE_SANDBOX must be one of"):
        load_settings({**env, "THREADLINE_SANDBOX": "none"})
    (home / "config.toml").write_text('[sandbox]\nmodes = "off"\n')
    with pytest.raises(ConfigError, match="unknown field modes"):
        load_settings(env)


def test_B_SBX_3_the_denial_note_names_the_sandbox_and_what_was_denied(tmp_path: Path):
    policy = build_policy("workspace-write", tmp_path, tmp_path, deny_read=("/nonexistent/secret",))
    note = denial_note("bash: /etc/x: Permission denied\n", policy)
    assert note and "sandbox" in note and "write outside" in note and "/etc/x: Permission denied" in note
    assert "escalate: true" in note
    assert "read-only" in (denial_note("touch: cannot touch '.git/x': Read-only file system", policy) or "")
    assert "network" in (denial_note("curl: (6) Could not resolve host: example.com", policy) or "")
    assert "hides" in (denial_note("cat: /nonexistent/secret/key: No such file or directory", policy) or "")
    assert denial_note("AssertionError: 1 != 2\nFAILED tests/test_x.py", policy) is None


def test_B_SBX_4_nested_git_finds_folders_gitfiles_links_and_bare_ones_and_stops_at_its_bound(tmp_path: Path):
    import subprocess

    from server.sandbox.policy import nested_git

    ws = tmp_path / "ws"
    (ws / "a" / "b" / ".git").mkdir(parents=True)
    (ws / "store" / "modules" / "m").mkdir(parents=True)
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").write_text("gitdir: ../store/modules/m\n")
    (ws / "linked").mkdir()
    (ws / "linked" / ".git").symlink_to(ws / "a" / "b" / ".git")
    subprocess.run(["git", "init", "-q", "--bare", str(ws / "srv.git")], check=True)
    found, stopped = nested_git((str(ws),))
    assert not stopped
    assert set(found) == {
        str(ws / "a" / "b" / ".git"),
        str(ws / "sub" / ".git"),
        str(ws / "store" / "modules" / "m"),
        str(ws / "srv.git"),
    }
    policy = build_policy("workspace-write", ws, tmp_path).with_nested_git()
    assert str(ws / "sub" / ".git") in policy.read_only
    _, stopped = nested_git((str(ws),), limit=2)
    assert stopped
    assert "stopped after 2 folders" in build_policy("workspace-write", ws, tmp_path).with_nested_git(2).skipped[-1]
