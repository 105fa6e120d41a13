"""An import keeps the failure flag its format has (SPEC B-SUM-10): a Claude Code tool result marked
``is_error`` is stored as a failed call, shown as one, and summarized as one, although its text does not say so;
a successful read that mentions errors is not. Real server over stdio, real SQLite."""

from __future__ import annotations

import json

import pytest

from server.cli.client import RpcError
from tests.harness import running_client

pytestmark = pytest.mark.asyncio


def _call(call_id: str, name: str, **args: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


MESSAGES = [
    {"role": "user", "content": "Deploy the service"},
    {"role": "assistant", "content": None, "tool_calls": [_call("c1", "deploy_service", url="https://prod/deploy")]},
    {"role": "tool", "tool_call_id": "c1", "content": "The resource is busy, try later", "is_error": True},
    {"role": "assistant", "content": None, "tool_calls": [_call("c2", "read_file", path="notes.md")]},
    {"role": "tool", "tool_call_id": "c2", "content": "Error handling: on Permission denied, fail", "is_error": False},
    {"role": "assistant", "content": "I will retry the deploy later."},
    {"role": "user", "content": "ok"},
]


async def test_B_SUM_10_an_imported_is_error_flag_is_kept_shown_and_summarized(home, folder):
    async with running_client(home) as client:
        result = await client.request("importSession", {"cwd": str(folder), "messages": MESSAGES})
        sid = result["sessionId"]
        items = (await client.request("readTranscript", {"sessionId": sid}))["items"]
        assert [i.get("toolStatus") for i in items if i["role"] == "tool"] == ["error", "ok"]
        compacted = await client.request("compactSession", {"sessionId": sid})
        summary = compacted["summary"]
        failures = summary.split("Failures to avoid:\n")[1].split("\nLast useful")[0].splitlines()
        assert failures == ["- deploy_service(https://prod/deploy): The resource is busy, try later"], summary


async def test_B_SUM_10_is_error_on_a_message_that_is_not_a_tool_result_is_refused(home, folder):
    async with running_client(home) as client:
        with pytest.raises(RpcError) as exc:
            bad = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y", "is_error": True}]
            await client.request("importSession", {"cwd": str(folder), "messages": bad})
        assert exc.value.code == -32602 and "messages[1].is_error" in exc.value.message, exc.value
        assert (await client.request("listSessions", {}))["sessions"] == []
