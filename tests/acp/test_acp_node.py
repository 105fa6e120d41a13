"""``threadline acp`` driven by the official ACP TypeScript SDK (``tests/acp/node``), with the model double behind it.

``tests/run.sh`` installs the SDK (``npm ci`` in ``tests/acp/node``); without Node the test is skipped.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.acp.support import write_call
from tests.fakes.fake_provider import FakeProvider
from tests.harness import API_KEY, REPO, server_env

NODE_DIR = Path(__file__).parent / "node"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
async def test_the_typescript_sdk_client_drives_a_prompt_with_permissions(home: Path, folder: Path):
    assert (NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(), (
        "run `npm ci` in tests/acp/node (tests/run.sh does)"
    )
    with FakeProvider(api_key=API_KEY) as fake:
        fake.push(
            write_call("call_a", "a.txt", "a\n"),
            {"content": "wrote a", "chunks": 2},
            write_call("call_b", "b.txt", "b\n"),
            {"content": "could not write b"},
        )
        proc = await asyncio.create_subprocess_exec(
            "node",
            str(NODE_DIR / "client.mjs"),
            str(folder),
            "--",
            sys.executable,
            "-m",
            "server",
            "acp",
            stdout=asyncio.subprocess.PIPE,
            env=server_env(home, fake.url),
            cwd=str(REPO),
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, out
    got = json.loads(out.decode().strip().splitlines()[-1])
    assert got["protocolVersion"] == 1 and got["loadSession"] is True
    assert got["stopReasons"] == ["end_turn", "end_turn"]
    assert [p["toolCallId"] for p in got["permissions"]] == ["call_a", "call_b"]
    assert got["permissions"][0]["kinds"] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert (folder / "a.txt").read_text() == "a\n" and not (folder / "b.txt").exists()
    ends = [u for u in got["updates"] if u["sessionUpdate"] == "tool_call_update"]
    assert [u["status"] for u in ends] == ["in_progress", "completed", "failed"]  # the rejected call never started
    ends = ends[1:]
    assert ends[0]["content"][0] == {"type": "diff", "path": str((folder / "a.txt").resolve()), "newText": "a\n"}
    chunks = [u["content"]["text"] for u in got["updates"] if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(chunks) == "wrote acould not write b"
    assert got["unknownModeError"] == -32602
    assert got["sessionId"] in got["listed"]
