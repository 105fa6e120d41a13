"""Many sessions with turns in flight on one server, while the same client reads and writes other sessions and
a second server process writes to the same database: every turn ends, every request is answered, and no
"database is locked" ever reaches a client (single writer per process, BEGIN IMMEDIATE, busy_timeout)."""

from __future__ import annotations

import asyncio
import json

from tests.harness import log_path
from tests.reliability.support import assert_view_valid, start, transcript, updates

SESSIONS = 8


def tool_item(n: int) -> dict:
    return {
        "content": f"step {n} ",
        "chunks": 4,
        "chunk_delay": 0.01,
        "tool_calls": [
            {"id": f"w{n}", "name": "write_file", "arguments": {"path": f"f{n}.txt", "content": f"file {n}"}},
            {"id": f"r{n}", "name": "list_files", "arguments": {}},
        ],
    }


async def test_many_turns_in_flight_never_see_a_locked_database(tmp_path, fake):
    home = tmp_path / "home"
    home.mkdir()
    fake.push(
        *[
            item
            for n in range(SESSIONS)
            for item in (tool_item(n), {"content": f"answer {n}", "chunks": 5, "chunk_delay": 0.01})
        ]
    )
    server, other = await asyncio.gather(start(home, fake.url), start(home, fake.url))
    try:
        works = [tmp_path / f"w{i}" for i in range(SESSIONS)]
        for w in works:
            w.mkdir()
        sids = [(await server.request("createSession", {"cwd": str(w)}))["sessionId"] for w in works]
        turns = [
            asyncio.wait_for(server.request("submitTurn", {"sessionId": s, "text": f"go {i}"}), 60)
            for i, s in enumerate(sids)
        ]

        async def same_server_traffic() -> list:
            out = []
            for i in range(20):
                out.append(await server.request("listSessions", {}))
                out.append(await server.request("readTranscript", {"sessionId": sids[i % SESSIONS]}))
                out.append(await server.request("searchTranscript", {"query": "answer"}))
                if i % 4 == 0:
                    out.append(
                        await server.request(
                            "importSession",
                            {"cwd": str(tmp_path), "messages": [{"role": "user", "content": f"imported {i}"}]},
                        )
                    )
            return out

        async def other_process_writes() -> list:
            return [
                await other.request(
                    "importSession",
                    {
                        "cwd": str(tmp_path),
                        "messages": [
                            {"role": "user", "content": f"from the other process {i}"},
                            {"role": "assistant", "content": "x" * 20_000},
                        ],
                    },
                )
                for i in range(15)
            ]

        results = await asyncio.gather(*turns, same_server_traffic(), other_process_writes())
        for result in results[:SESSIONS]:
            assert result["stopReason"] == "endTurn", result
        for sid in sids:
            items = await transcript(server, sid)
            assert [i["seq"] for i in items] == list(range(1, len(items) + 1))
            assert updates(server, sid, "turnCompleted")[-1]["stopReason"] == "endTurn"
            await assert_view_valid(server, sid)
        everything = json.dumps([results, server.notifications, other.notifications]).lower()
        assert "locked" not in everything and "busy" not in everything
    finally:
        await asyncio.gather(server.close(), other.close())
    assert "locked" not in log_path(home).read_text().lower()
