"""``threadline policy-check`` as a subprocess on a recorded session: the decision the live server would make for
every call, with its JSON and exit status; hooks run, no tool runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.harness import REPO, server_env
from tests.hooks.test_hook_examples import config, example

THREADLINE = REPO / ".venv" / "bin" / "threadline"


RECORDED: list[dict[str, Any]] = [
    {"role": "user", "content": "tidy up"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}},
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "write_file", "arguments": '{"path": "x.txt", "content": "x"}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "run_command", "arguments": '{"command": "rm -rf /tmp/elsewhere"}'},
            },
            {
                "id": "c3",
                "type": "function",
                "function": {"name": "run_command", "arguments": '{"command": "mkfs.ext4 /dev/sda1"}'},
            },
            {"id": "c4", "type": "function", "function": {"name": "mcp__fake__echo", "arguments": '{"text": "hi"}'}},
            {"id": "c5", "type": "function", "function": {"name": "teleport", "arguments": '{"to": "mars"}'}},
        ],
    },
    *({"role": "tool", "tool_call_id": f"c{i}", "content": "recorded"} for i in range(6)),
    {"role": "assistant", "content": "done"},
]


def threadline(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(THREADLINE), *args], env=server_env(home), cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_policy_check_on_a_recorded_session_json_and_exit_status(tmp_path, folder):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(config(home))
    recorded = tmp_path / "session.json"
    recorded.write_text(json.dumps(RECORDED))

    done = threadline(home, "policy-check", str(recorded), "--cwd", str(folder), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    decided = [(c["index"], c["toolCallId"], c["tool"], c["decision"], c["by"]) for c in result["calls"]]
    hook = f"hook: {example('block_rm_outside.py')}"
    assert decided == [
        (0, "c0", "read_file", "allow", "policy"),
        (1, "c1", "write_file", "ask", "policy"),
        (2, "c2", "run_command", "deny", hook),
        (3, "c3", "run_command", "forbidden", "deny list"),
        (4, "c4", "mcp__fake__echo", "ask", "policy"),
        (5, "c5", "teleport", "deny", "unknown tool"),
    ]
    assert "rm outside the session folder" in result["calls"][2]["reason"]
    assert result["summary"] == {"allow": 1, "ask": 2, "deny": 2, "forbidden": 1}
    assert not (folder / "x.txt").exists()  # no tool ran

    assert threadline(home, "policy-check", str(recorded), "--cwd", str(folder), "--fail-on", "deny").returncode == 1
    auto = threadline(home, "policy-check", str(recorded), "--cwd", str(folder), "--policy", "auto")
    assert auto.returncode == 0 and "1 ask" not in auto.stdout and "2 deny, 1 forbidden" in auto.stdout

    # a stored session, by id: the same decisions
    imported = threadline(home, "import", str(recorded), "--cwd", str(folder))
    sid = imported.stdout.split()[-1]
    by_id = threadline(home, "policy-check", "--session", sid, "--cwd", str(folder), "--json", "--fail-on", "ask")
    assert by_id.returncode == 1
    assert [c["decision"] for c in json.loads(by_id.stdout)["calls"]] == [d[3] for d in decided]

    calm = tmp_path / "calm.json"
    calm.write_text(
        json.dumps([*RECORDED[:1], {**RECORDED[1], "tool_calls": RECORDED[1]["tool_calls"][:1]}, *RECORDED[2:3]])
    )
    assert threadline(home, "policy-check", str(calm), "--cwd", str(folder), "--fail-on", "ask").returncode == 0


def test_issue_33_policy_check_under_plan_mode_denies_what_plan_mode_refuses(tmp_path, folder):
    """The live loop and policy-check share decide_call: under ``--policy plan`` a write, a command and an MCP call
    are denied by plan mode (after the hooks and before the deny list), reading is allowed."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(config(home))
    recorded = tmp_path / "session.json"
    recorded.write_text(json.dumps(RECORDED))
    done = threadline(home, "policy-check", str(recorded), "--cwd", str(folder), "--json", "--policy", "plan")
    assert done.returncode == 0, done.stderr
    calls = json.loads(done.stdout)["calls"]
    hook = f"hook: {example('block_rm_outside.py')}"
    assert [(c["tool"], c["decision"], c["by"]) for c in calls] == [
        ("read_file", "allow", "policy"),
        ("write_file", "deny", "plan mode"),
        ("run_command", "deny", hook),  # the hook's block comes first
        ("run_command", "deny", "plan mode"),
        ("mcp__fake__echo", "deny", "plan mode"),
        ("teleport", "deny", "unknown tool"),
    ]
    assert calls[1]["reason"].startswith("Permission denied: write_file was not run because this session is in plan")


def test_policy_check_covers_the_background_process_tools(tmp_path, folder):
    """A background ``run_command`` is decided as any command (hooks, deny list, policy); reading a
    process's output or stopping it asks nothing (it only touches what the session started)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(config(home))

    def fn(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

    calls = [
        fn("b0", "run_command", {"command": "python3 -m http.server 8000", "background": True}),
        fn("b1", "run_command", {"command": "rm -rf /tmp/elsewhere", "background": True}),
        fn("b2", "process_output", {"processId": "bg-1"}),
        fn("b3", "stop_process", {"processId": "bg-1"}),
    ]
    recorded = tmp_path / "bg.json"
    recorded.write_text(
        json.dumps(
            [
                {"role": "user", "content": "serve"},
                {"role": "assistant", "content": None, "tool_calls": calls},
                *({"role": "tool", "tool_call_id": c["id"], "content": "recorded"} for c in calls),
            ]
        )
    )
    done = threadline(home, "policy-check", str(recorded), "--cwd", str(folder), "--json", "--policy", "ask")
    assert done.returncode == 0, done.stderr
    decided = [(c["tool"], c["decision"], c["by"]) for c in json.loads(done.stdout)["calls"]]
    hook = f"hook: {example('block_rm_outside.py')}"
    assert decided == [
        ("run_command", "ask", "policy"),
        ("run_command", "deny", hook),
        ("process_output", "allow", "policy"),
        ("stop_process", "allow", "policy"),
    ]


def _web_calls(*calls: tuple[str, dict[str, str]]) -> list[dict[str, Any]]:
    tool_calls = [
        {"id": f"w{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)
    ]
    return [
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": None, "tool_calls": tool_calls},
        *({"role": "tool", "tool_call_id": c["id"], "content": "recorded"} for c in tool_calls),
    ]


def test_B_WEB_1_policy_check_decides_web_calls_as_the_live_server_would(tmp_path, folder):
    """Per host: ``[web] allow_hosts`` allows, ``deny_hosts`` forbids under every policy, any other host asks (in
    plan mode too: a fetch reads); ``web_search`` asks nothing, and exists only with a provider."""
    home = tmp_path / "home"
    home.mkdir()
    web = '[web]\nallow_hosts = ["docs.python.org", "*.readthedocs.io"]\ndeny_hosts = ["evil.example"]\n'
    (home / "config.toml").write_text(web + 'search_provider = "searxng"\nsearch_url = "http://127.0.0.1:9"\n')
    recorded = tmp_path / "web.json"
    recorded.write_text(
        json.dumps(
            _web_calls(
                ("web_fetch", {"url": "https://docs.python.org/3/library/ssl.html"}),
                ("web_fetch", {"url": "https://pygls.readthedocs.io/en/latest/"}),
                ("web_fetch", {"url": "https://example.com/?q=secret"}),
                ("web_fetch", {"url": "https://EVIL.example/x"}),
                ("web_search", {"query": "pygls"}),
            )
        )
    )
    expected = [
        ("web_fetch", "allow", "web rule"),
        ("web_fetch", "allow", "web rule"),
        ("web_fetch", "ask", "policy"),
        ("web_fetch", "forbidden", "deny_hosts"),
        ("web_search", "allow", "policy"),
    ]
    for policy, want in [
        ("ask", expected),
        ("plan", expected),
        ("auto", [*[(t, "allow", "policy") for t, _, _ in expected[:3]], expected[3], expected[4]]),
    ]:
        done = threadline(home, "policy-check", str(recorded), "--cwd", str(folder), "--json", "--policy", policy)
        assert done.returncode == 0, done.stderr
        calls = json.loads(done.stdout)["calls"]
        assert [(c["tool"], c["decision"], c["by"]) for c in calls] == want, policy
        assert "evil.example is refused by [web] deny_hosts" in calls[3]["reason"]

    (home / "config.toml").write_text(web)  # no provider: no web_search
    done = threadline(home, "policy-check", str(recorded), "--cwd", str(folder), "--json")
    assert [c["by"] for c in json.loads(done.stdout)["calls"]][-1] == "unknown tool"
