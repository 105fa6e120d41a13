"""B-SBX-1 on macOS: the Seatbelt profile carries the same policy as Linux's (checked as text: it cannot run here)."""

from __future__ import annotations

from pathlib import Path

from server.sandbox.policy import build_policy
from server.sandbox.seatbelt import command, profile, quote


def policy(tmp_path: Path, **kw):
    (tmp_path / "ws").mkdir()
    (tmp_path / "tmp").mkdir()
    return build_policy("workspace-write", tmp_path / "ws", tmp_path / "tmp", **kw)


def test_B_SBX_1_seatbelt_denies_by_default_and_writes_only_where_allowed(tmp_path):
    text = profile(policy(tmp_path, writable_roots=(str(tmp_path / "tmp"),)))
    assert text.startswith("(version 1)\n(deny default)\n")
    allow = text.index("(allow file-write*")
    assert f"(subpath {quote(str((tmp_path / 'ws').resolve()))})" in text[allow:]
    assert f"(subpath {quote(str((tmp_path / 'tmp').resolve()))})" in text[allow:]
    deny = text.index("(deny file-write*")
    assert deny > allow  # SBPL: the last matching rule wins, so .git/ stays read-only inside the folder
    assert f"(subpath {quote(str((tmp_path / 'ws').resolve() / '.git'))})" in text[deny:]
    assert f"(subpath {quote(str((tmp_path / 'ws').resolve() / '.threadline'))})" in text[deny:]
    assert "(allow network-outbound)" not in text and "network-inbound" not in text


def test_B_SBX_1_seatbelt_hides_deny_read_after_allowing_reads(tmp_path):
    text = profile(policy(tmp_path, deny_read=(str(tmp_path / "secrets"),)))
    hidden = text.index("(deny file-read* file-write*")
    assert text.index("(allow file-read*)") < hidden
    assert quote(str((tmp_path / "secrets").resolve())) in text[hidden:]


def test_B_SBX_1_seatbelt_network_when_allowed_and_paths_quoted(tmp_path):
    weird = tmp_path / 'a "quoted" \\ name'
    weird.mkdir()
    (weird / "ws").mkdir()
    p = build_policy("workspace-write", weird / "ws", tmp_path, network=True)
    text = profile(p)
    assert "(allow network-outbound)" in text
    assert '\\"quoted\\" \\\\ name' in text and text.count("(") == text.count(")")
    assert command(p, ["make", "test"])[:2] == ["/usr/bin/sandbox-exec", "-p"]
    assert command(p, ["make", "test"])[-3:] == ["--", "make", "test"]


def test_B_SBX_1_seatbelt_read_only_mode_writes_only_the_temp_folder(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "tmp").mkdir()
    text = profile(build_policy("read-only", tmp_path / "ws", tmp_path / "tmp"))
    allow = text[text.index("(allow file-write*") :]
    assert quote(str((tmp_path / "tmp").resolve())) in allow
    assert f"(subpath {quote(str((tmp_path / 'ws').resolve()))})" not in allow


def test_B_SBX_4_seatbelt_denies_writes_to_any_git_path_component_after_the_grants(tmp_path):
    import re

    text = profile(policy(tmp_path))
    rule = text.index("(deny file-write*\n  (regex #")
    assert rule > text.index("(allow file-write*")
    pattern = re.compile(text[rule:].split('#"', 1)[1].split('"', 1)[0])
    assert pattern.search("/ws/vendor/lib/.git/config") and pattern.search("/ws/sub/.GIT")
    assert not pattern.search("/ws/.gitignore") and not pattern.search("/ws/my.git.txt")
