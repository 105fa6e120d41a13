"""``threadline replay --requests-out``: one line per model call, the messages exactly as a real run sends them."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from server.agent.views import tool_reserve_tokens
from server.cli.demo import draw
from server.cli.replay_run import ReplayReport, Step, cache_breaks
from server.context import estimate_message_tokens
from tests.conftest import KIMI, load_trajectory
from tests.fakes.fake_provider import FakeProvider
from tests.harness import REPO, server_env, start_client

THREADLINE = REPO / ".venv" / "bin" / "threadline"


def _replay(recording: Path, window: int, out: Path, home: Path) -> tuple[dict, list[list[str]]]:
    result = subprocess.run(
        [
            str(THREADLINE),
            "replay",
            str(recording),
            "--context-window",
            str(window),
            "--json",
            "--requests-out",
            str(out),
        ],
        env=server_env(home),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert result.returncode == 0, result.stderr + result.stdout[-2000:]
    lines = result.stdout.splitlines()
    return json.loads(lines[-1]), [line.split() for line in lines[1:-2]]


def _requests(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_requests_out_has_one_line_per_model_call_within_the_window(tmp_path):
    window = 8_000
    out = tmp_path / "requests.jsonl"
    summary, table = _replay(KIMI, window, out, tmp_path / "home")
    requests = _requests(out)
    assert len(requests) == summary["steps"] == len(table) > 50
    assert [r["step"] for r in requests] == list(range(1, len(requests) + 1))
    assert summary["compactions"] >= 3
    for request, row in zip(requests, table):
        tokens = sum(estimate_message_tokens(m) for m in request["messages"])
        assert tokens == int(row[3].replace(",", "")), row  # the size the loop reported for this very call
        assert tokens <= window - tool_reserve_tokens(), row  # the tool definitions go with every request
        assert request["messages"][0]["role"] == "system"


def _text_recording() -> list[dict]:
    """The kimi-cli session as plain text turns, each user message with the first text answer after it (no tool
    calls, one answer per turn): a real run can answer it without running tools and ends each turn as a replay."""
    recording: list[dict] = []
    for msg in load_trajectory(KIMI):
        text = msg.get("content")
        if not isinstance(text, str) or not text.strip():
            continue
        if msg["role"] == "user":
            if recording and recording[-1]["role"] == "user":
                recording.pop()  # no answer to this one
            recording.append({"role": "user", "content": text})
        elif msg["role"] == "assistant" and recording and recording[-1]["role"] == "user":
            recording.append({"role": "assistant", "content": text})
    return recording if recording[-1]["role"] == "assistant" else recording[:-1]


async def _real_run(recording: list[dict], window: int, home: Path, work: Path) -> list[list[dict]]:
    """The same turns through a real server and the model-service double; what the double received."""
    with FakeProvider() as fake:
        for msg in recording:
            if msg["role"] == "assistant":  # prompt_tokens 1: no calibration, as in a replay (no usage)
                fake.push({"content": msg["content"], "usage": {"prompt_tokens": 1}})
        client = await start_client(
            home, fake.url, THREADLINE_CONTEXT_WINDOW=str(window), THREADLINE_APPROVAL_POLICY="auto"
        )
        try:
            sid = (await client.request("createSession", {"cwd": str(work)}))["sessionId"]
            for msg in recording:
                if msg["role"] == "user":
                    result = await client.request("submitTurn", {"sessionId": sid, "text": msg["content"]})
                    assert result["stopReason"] == "endTurn", result
        finally:
            await client.close()
        return [r["body"]["messages"] for r in fake.requests if r["path"].startswith("/v1/chat")]


def test_requests_out_equals_what_a_real_run_sends(tmp_path):
    window = 3_000
    recording = _text_recording()
    assert sum(m["role"] == "user" for m in recording) >= 8
    path = tmp_path / "text-turns.json"
    path.write_text(json.dumps(recording, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "requests.jsonl"
    summary, _ = _replay(path, window, out, tmp_path / "replay-home")
    # The comparison covers compacted views, not only full ones: a compaction and the calls that repeat it.
    assert summary["compactions"] >= 1
    assert sum(n for mode, n in summary["modes"].items() if mode != "full") >= 2
    work = tmp_path / "work"
    work.mkdir()
    sent = asyncio.run(_real_run(recording, window, tmp_path / "home", work))
    replayed = [r["messages"] for r in _requests(out)]
    assert len(replayed) == len(sent) == summary["steps"]
    for step, (ours, theirs) in enumerate(zip(replayed, sent), 1):
        assert ours == theirs, f"step {step} differs"


def test_cache_breaks_are_calls_whose_unchanged_prefix_is_under_half_the_last_request(tmp_path):
    system = {"role": "system", "content": "s" * 40}
    talk = [{"role": "user", "content": "u" * 400}, {"role": "assistant", "content": "a" * 400}]
    summary = {"role": "system", "content": "summary " * 10}
    requests = [[system, talk[0]], [system, *talk], [system, summary, talk[1]], [system, summary, talk[1]]]
    out = tmp_path / "requests.jsonl"
    out.write_text("".join(json.dumps({"step": i, "messages": m}) + "\n" for i, m in enumerate(requests, 1)))
    assert cache_breaks(out) == [3]  # 2 appends, 3 swaps the history for a summary, 4 resends it unchanged


def test_the_demo_picture_marks_cache_breaks():
    steps = [Step(1, i, 100 * i, "full", False, 100 * i) for i in range(1, 6)]
    report = ReplayReport(Path("x.json"), 16_000, steps)
    assert draw(report, 300, "t", [3]) != draw(report, 300, "t")
