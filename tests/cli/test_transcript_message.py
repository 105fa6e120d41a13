"""The client reads a transcript back in exactly the shape the server's pipeline reads the store: ``threadline
replay`` and ``eval`` size and fold (B-SUM-10) each message as the server does, by the server's one conversion."""

from __future__ import annotations

from server.cli.replay_run import transcript_message
from server.context import estimate_message_tokens, is_failure
from server.transcript.convert import to_item
from server.transcript.records import StoredMessage

CALL = {"id": "c1", "type": "function", "function": {"name": "run_command", "arguments": '{"command": "ls"}'}}
STORED = [
    StoredMessage(1, "system", "rules", "t"),
    StoredMessage(2, "user", "look", "t", images=[{"mimeType": "image/png", "data": "iVBORw0KGgo="}]),
    StoredMessage(3, "assistant", None, "t", tool_calls=[CALL], reasoning="thinking", status="interrupted"),
    # An imported result marked is_error: its words say nothing of a failure, its stored status does.
    StoredMessage(4, "tool", "exit 0 but wrong", "t", tool_call_id="c1", name="run_command", tool_status="error"),
    StoredMessage(
        5, "tool", "Tool failed: no such file", "t", tool_call_id="c1", name="run_command", tool_status="error"
    ),
    StoredMessage(6, "tool", "a.txt", "t", tool_call_id="c1", name="run_command", tool_status="ok"),
]


def test_the_clients_transcript_message_is_the_stores_pipeline_message():
    for stored in STORED:
        assert transcript_message(to_item(stored)) == stored.to_openai()


def test_the_client_sees_a_stored_failure_flag_and_the_same_estimate():
    for stored in STORED:
        read = transcript_message(to_item(stored))
        assert estimate_message_tokens(read) == estimate_message_tokens(stored.to_openai())
        if stored.role == "tool":
            assert is_failure(read["content"], read.get("name"), read.get("tool_status")) == (
                stored.tool_status == "error"
            )
