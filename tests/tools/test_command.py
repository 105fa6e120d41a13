"""run_command: output and exit codes, timeouts that kill the whole process group, the forbidden list, and an
environment without provider keys."""

from __future__ import annotations

import asyncio

import pytest

from server.tools import run_tool
from server.tools.command import forbidden_reason


def running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may leave killed orphans unreaped)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def test_output_and_exit_code(ctx):
    ok = await run_tool(ctx, "run_command", {"command": "echo hi; echo err >&2"})
    assert ok.status == "ok" and ok.content == "hi\nerr\n\n[exit code 0]"
    failed = await run_tool(ctx, "run_command", {"command": "echo partial; exit 3"})
    assert failed.status == "error" and failed.content == "Tool failed: command exited with code 3\npartial\n"


async def test_runs_in_the_session_folder(ctx):
    out = await run_tool(ctx, "run_command", {"command": "pwd"})
    assert out.content.splitlines()[0] == str(ctx.cwd)


async def test_timeout_kills_the_process_group(ctx, tmp_path):
    marker = tmp_path / "child.pid"
    out = await run_tool(ctx, "run_command", {"command": f"sleep 30 & echo $! > {marker}; wait", "timeout": 1})
    assert out.status == "error" and "timed out after 1 s" in out.content
    child = int(marker.read_text())
    for _ in range(50):
        if not running(child):
            break
        await asyncio.sleep(0.1)
    assert not running(child), "the background child of the timed-out command still runs"


async def test_provider_keys_never_reach_the_command(ctx, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("THREADLINE_API_KEY", "sk-threadline")
    monkeypatch.setenv("SOME_TOOL_TOKEN", "sk-test-secret")  # any variable holding the configured key
    monkeypatch.setenv("HARMLESS", "kept")
    out = (await run_tool(ctx, "run_command", {"command": "env"})).content
    assert "sk-openai" not in out and "sk-threadline" not in out and "sk-test-secret" not in out
    assert "HARMLESS=kept" in out


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "rm -fr ~",
        "sudo rm -rf / --no-preserve-root",
        "mkfs.ext4 /dev/sda1",
        "dd if=/dev/zero of=/dev/sda",
        "shutdown -h now",
        ":(){ :|:& };:",
        "chmod -R 777 /",
        "make && sudo reboot",
        "echo done; poweroff",
        "sudo -n systemctl poweroff",
        "x=$(halt)",
    ],
)
def test_destructive_system_commands_are_forbidden(command):
    assert forbidden_reason(command)


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build/",
        "rm -rf ./node_modules",
        "dd if=a of=b",
        "ls /",
        "echo shutdown-notes > notes.txt",
        'git commit -m "fix reboot handler"',
        "dd if=/dev/zero of=/dev/null count=1",
        "grep -r mkfs docs/",
    ],
)
def test_ordinary_commands_are_not_forbidden(command):
    assert forbidden_reason(command) is None


async def test_a_forbidden_command_is_refused_before_running(ctx):
    out = await run_tool(ctx, "run_command", {"command": "rm -rf / ; touch ran.txt"})
    assert out.status == "denied" and out.content.startswith("Forbidden:")
    assert not (ctx.cwd / "ran.txt").exists()


async def test_a_huge_or_infinite_timeout_is_capped_not_a_crash(ctx):
    """The model set ``timeout: 1e308``; the loop's timer overflowed. Now it is capped."""
    for timeout in (1e308, float("inf")):
        out = await run_tool(ctx, "run_command", {"command": "echo capped", "timeout": timeout})
        assert out.status == "ok" and "capped" in out.content, out
    out = await run_tool(ctx, "run_command", {"command": "echo x", "timeout": float("nan")})
    assert out.status == "error" and "timeout" in out.content, out


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf ~/*",
        "rm -rf $HOME/*",
        "rm -r -f /*",
        "rm --recursive --force ~",
        "cd /tmp && rm -rf ~/",
        "echo hi | xargs rm -rf /",
        "sudo -E rm -rf /home",
        "X=1 rm -Rf ~",
        "bash -c 'true'; /sbin/shutdown now",
        "env poweroff",
        "(reboot)",
        "echo `halt`",
    ],
)
def test_the_forbidden_list_parses_commands_so_respellings_are_caught(command):
    """``rm -rf ~/*`` ran (text patterns missed it). A seatbelt, not a sandbox: approval protects."""
    assert forbidden_reason(command), command


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf ./build ~/project/tmp",
        "echo 'rm -rf /'",
        "grep -r shutdown .",
        "git log --grep=reboot",
        "python -m halt_tests",
        "rm -f ~/.cache/x.lock",
    ],
)
def test_the_parsed_forbidden_list_leaves_ordinary_commands_alone(command):
    assert forbidden_reason(command) is None, command
