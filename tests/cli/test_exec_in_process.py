"""``threadline exec`` runs the server in its own process (``server.cli.in_process``, ``server.edge.local``):
what that must not cost. The behaviour of exec itself (formats, exit statuses, signals, sessions) is proven by
tests/e2e/test_exec_e2e.py, which runs the same command."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import env_fixture, fake_fixture, threadline
from tests.harness import API_KEY

fake = fake_fixture()
env = env_fixture()


def test_exec_runs_the_core_in_its_own_process_without_pygls_or_lsprotocol(fake, env, folder):
    """Every module the process imports is listed by ``PYTHONPROFILEIMPORTTIME`` (by both images, should exec
    re-execute itself to hide its keys): the in-process front end is among them, pygls and lsprotocol are not."""
    fake.push({"content": "All good."})
    run = threadline(
        {**env, "PYTHONPROFILEIMPORTTIME": "1"}, "exec", "--cwd", str(folder), "--output-format", "json", "go"
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["result"] == "All good."
    imported = {line.rsplit("|", 1)[1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
    assert {"server.edge.local", "server.runtime", "server.methods.submit_turn"} <= imported
    assert sorted(m for m in imported if m.split(".")[0] in ("pygls", "lsprotocol")) == []


# Walk up from the command's shell to the exec process (its command line names ``threadline exec``), print its
# environment block: what the review's attack reads (``cat /proc/$PPID/environ``), whatever lies in between.
ATTACK = (
    "p=$(cut -d' ' -f4 /proc/self/stat); "
    "while [ \"$p\" -gt 1 ] && ! tr '\\0' ' ' < /proc/$p/cmdline | grep -q -- 'threadlin[e] exec'; "
    "do p=$(cut -d' ' -f4 /proc/$p/stat); done; "
    "echo PID=$p; tr '\\0' '\\n' < /proc/$p/environ"
)


@pytest.mark.parametrize("where", ["built_in_variable", "named_in_config"])
def test_exec_hides_the_provider_key_from_the_commands_its_server_runs(fake, env, home, folder, where):
    """The server now lives in exec's process, which CI starts with the key in its environment: exec hides it from
    its environment block first (``secret_env.hide_in_place``), as ``threadline serve`` does by re-executing
    itself, so a command reading its parent's block finds neither the key nor the variables that held it, and
    the provider still gets it (the double refuses a request without it)."""
    if where == "named_in_config":  # a name outside the built-in list, and a copy of the key under another name
        (home / "config.toml").write_text('[provider]\napi_key_env = "XAI_API_KEY"\n')
        env = {k: v for k, v in env.items() if k != "THREADLINE_API_KEY"}
        env |= {"XAI_API_KEY": API_KEY, "COPY_OF_KEY": API_KEY}
    fake.push(
        {"tool_calls": [{"id": "c1", "name": "run_command", "arguments": {"command": ATTACK}}]},
        {"content": "done"},
    )
    args = ("--cwd", str(folder), "--policy", "auto", "--sandbox", "off", "--output-format", "stream-json", "look")
    run = threadline(env, "exec", *args)
    assert run.returncode == 0, run.stderr
    objects = [json.loads(line) for line in run.stdout.splitlines()]
    (shown,) = [
        o["update"]["content"] for o in objects if o["type"] == "update" and o["update"]["kind"] == "toolResult"
    ]
    assert "PID=" in shown and "THREADLINE_HOME=" in shown, shown  # it did read exec's block
    assert API_KEY not in shown and "THREADLINE_API_KEY" not in shown, shown
    assert "XAI_API_KEY" not in shown and "COPY_OF_KEY" not in shown, shown
    assert objects[-1]["result"] == "done"
