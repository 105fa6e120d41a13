"""Subagents (B-SUB-1): the parent's peak request size and cost on a scripted exploration, with and without ``task``.

    .venv/bin/python bench/subagents.py [--reads 33] [--window 200000] [--out bench/SUBAGENTS.md]

The exploration is a recorded one: the file reads (``Read`` calls and what they returned) of the spotter session
in data/trajectories/, in their order. Each read's recorded output becomes a file in a fresh workspace, and the
real server (``python -m server`` over stdio, a real SQLite file) runs two scripted turns against the model double
(tests/fakes/fake_provider.py, which reports prompt tokens and a prefix cache as OpenAI does):

- without: the parent reads every file itself, one model call per read, then answers;
- with: the parent makes one ``task`` call, a child reads every file and reports a paragraph, the parent answers;

then, in both, the conversation goes on for a few one-call turns (``--followups``), each re-sending what the
parent's context holds.

Sizes are the provider's prompt tokens of each model call (the double's count: JSON characters / 4), read back
from the stored ``usage`` events; cost is priced by the server at PRICE (USD per million tokens, cached input at a
tenth), so the prefix cache counts as it would. The window is large enough that no compaction happens, so the
figures show what the exploration itself adds; with a smaller window the "without" parent compacts instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from server.cli.client import Client
from tests.fakes.fake_provider import FakeProvider

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "data" / "trajectories" / "spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.json"
PRICE = {"input": 3.0, "cached_input": 0.3, "output": 15.0}
KEY = "sk-bench-subagents"
REPORT = "The module boundaries are in src/; the handler you want is in the third file read; nothing else matters."


def recorded_reads(limit: int) -> list[tuple[str, str]]:
    """(path, recorded output) of the session's successful ``Read`` calls, in order."""
    messages = json.loads(SOURCE.read_text())
    calls = {
        c["id"]: json.loads(c["function"]["arguments"]).get("file_path", "")
        for m in messages
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == "Read"
    }
    reads = [
        (calls[m["tool_call_id"]], m.get("content") or "")
        for m in messages
        if m["role"] == "tool" and m.get("tool_call_id") in calls and not (m.get("content") or "").startswith("<tool")
    ]
    return [r for r in reads if r[1].strip()][:limit]


def workspace(folder: Path, reads: list[tuple[str, str]]) -> list[str]:
    names = []
    for n, (path, content) in enumerate(reads):
        name = f"f{n:02d}_{Path(path).name or 'file'}"
        (folder / name).write_text(content)
        names.append(name)
    return names


def read_call(n: int, name: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": f"call_read{n}", "name": "read_file", "arguments": {"path": name}}]}


async def scenario(with_task: bool, reads: list[tuple[str, str]], window: int, followups: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tl-bench-sub-") as tmp:
        home, ws = Path(tmp) / "home", Path(tmp) / "ws"
        home.mkdir()
        ws.mkdir()
        price = ", ".join(f"{k} = {v}" for k, v in PRICE.items())
        (home / "config.toml").write_text(f"[provider]\nprice = {{ {price} }}\n")
        names = workspace(ws, reads)
        reading = [read_call(n, name) for n, name in enumerate(names)]
        task = {"description": "explore", "prompt": "Read every file in the folder and tell me where the handler is."}
        script = (
            [{"tool_calls": [{"id": "call_task", "name": "task", "arguments": task}]}, *reading, {"content": REPORT}]
            if with_task
            else reading
        )
        with FakeProvider(api_key=KEY) as fake:
            fake.push(*script, {"content": "Done: " + REPORT}, *({"content": "ok"} for _ in range(followups)))
            env = {
                "THREADLINE_HOME": str(home),
                "THREADLINE_BASE_URL": fake.url,
                "THREADLINE_MODEL": "bench-model",
                "THREADLINE_API_KEY": KEY,
                "THREADLINE_CONTEXT_WINDOW": str(window),
            }
            client = await Client.spawn(env=env, cwd=str(REPO))
            try:
                sid = (await client.request("createSession", {"cwd": str(ws), "approvalPolicy": "auto"}))["sessionId"]
                result = await client.request("submitTurn", {"sessionId": sid, "text": "Where is the handler?"})
                assert result["stopReason"] == "endTurn", result
                for n in range(followups):  # the conversation goes on: each later call re-sends what it holds
                    await client.request("submitTurn", {"sessionId": sid, "text": f"follow-up {n}"})
            finally:
                await client.close()
        return measure(home, sid, followups)


def measure(home: Path, parent: str, followups: int) -> dict[str, Any]:
    db = sqlite3.connect(f"file:{home / 'threadline.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT session_id, payload FROM events WHERE kind = 'usage' ORDER BY id").fetchall()
    finally:
        db.close()
    own = [json.loads(p) for s, p in rows if s == parent]
    child = [json.loads(p) for s, p in rows if s != parent]
    later = own[len(own) - followups :] if followups else []
    own = own[: len(own) - followups]
    return {
        "followup_request_tokens": later[-1]["inputTokens"] if later else 0,
        "followup_cost_usd": round(sum(e.get("costUsd") or 0 for e in later), 4),
        "parent_calls": len(own),
        "parent_peak_request_tokens": max(e["inputTokens"] for e in own),
        "parent_last_request_tokens": own[-1]["inputTokens"],
        "parent_input_tokens": sum(e["inputTokens"] for e in own),
        "parent_cost_usd": round(sum(e.get("costUsd") or 0 for e in own), 4),
        "child_calls": len(child),
        "child_peak_request_tokens": max((e["inputTokens"] for e in child), default=0),
        "child_cost_usd": round(sum(e.get("costUsd") or 0 for e in child), 4),
        "total_cost_usd": round(sum(e.get("costUsd") or 0 for e in own + child), 4),
    }


def table(
    reads: int, read_chars: int, window: int, followups: int, without: dict[str, Any], with_: dict[str, Any]
) -> str:
    rows = [
        ("parent model calls", "parent_calls"),
        ("parent peak request (tokens)", "parent_peak_request_tokens"),
        ("parent last request (tokens)", "parent_last_request_tokens"),
        ("parent input, all calls (tokens)", "parent_input_tokens"),
        ("parent cost (USD)", "parent_cost_usd"),
        ("child model calls", "child_calls"),
        ("child peak request (tokens)", "child_peak_request_tokens"),
        ("child cost (USD)", "child_cost_usd"),
        ("total cost, parent + child (USD)", "total_cost_usd"),
        ("then: a follow-up request (tokens)", "followup_request_tokens"),
        ("then: cost of the follow-up turns (USD)", "followup_cost_usd"),
    ]
    lines = [
        "# Subagents: the parent's context with and without `task` (B-SUB-1)",
        "",
        f"{reads} recorded file reads ({read_chars:,} characters) from `{SOURCE.name}`, window {window:,} tokens, "
        f"price {PRICE} USD per million tokens, then {followups} one-call follow-up turns. Command: "
        f"`.venv/bin/python bench/subagents.py --reads {reads} --window {window} --followups {followups}`.",
        "",
        "| | without task | with task |",
        "|---|---:|---:|",
        *(f"| {label} | {without[key]:,} | {with_[key]:,} |" for label, key in rows),
        "",
    ]
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=33)
    parser.add_argument("--window", type=int, default=200_000)
    parser.add_argument("--followups", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "SUBAGENTS.md")
    args = parser.parse_args()
    reads = recorded_reads(args.reads)
    without = await scenario(False, reads, args.window, args.followups)
    with_ = await scenario(True, reads, args.window, args.followups)
    text = table(len(reads), sum(len(c) for _, c in reads), args.window, args.followups, without, with_)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    asyncio.run(main())
