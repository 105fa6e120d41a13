"""The wire contract in code: schema freshness, the fixed contract's names (protocol/README.md), camelCase, and no import of ``server``."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import get_args

import msgspec

from protocol import METHODS, NOTIFICATIONS, SERVER_REQUESTS, messages, schema, updates
from tests.harness import REPO

# the fixed contract's names (protocol/README.md): every method with the params and result fields it promises.
PROTOCOL_MD = {
    "createSession": ({"cwd", "title"}, {"sessionId"}),
    "listSessions": ({"cwd", "limit"}, {"sessions"}),
    "importSession": ({"cwd", "title", "messages"}, {"sessionId", "messageCount"}),
    "readTranscript": ({"sessionId", "afterSeq", "limit"}, {"items", "nextSeq"}),
    "searchTranscript": ({"query", "sessionId", "limit"}, {"hits"}),
    "forkSession": ({"sessionId", "atSeq"}, {"sessionId"}),
    "deleteSession": ({"sessionId"}, set()),
    "submitTurn": ({"sessionId", "text", "images"}, {"turnId", "stopReason", "usage", "error"}),
    "cancelTurn": ({"sessionId"}, {"cancelled"}),
    "getContextView": (
        {"sessionId", "contextWindowTokens", "thresholdRatio", "keepRecentTokens"},
        {
            "messages",
            "estimatedTokens",
            "thresholdTokens",
            "contextWindowTokens",
            "keepRecentTokens",
            "mode",
            "summary",
            "compactedToolOutputs",
            "transcriptMessages",
        },
    ),
    "readArtifact": (
        {"sessionId", "artifactId", "byteRange", "lineRange", "search"},
        {"artifactId", "totalBytes", "totalLines", "content", "matches"},
    ),
}
UPDATE_KINDS = {
    "turnStarted",
    "userMessage",
    "assistantDelta",
    "reasoningDelta",
    "assistantMessage",
    "toolCall",
    "toolResult",
    "artifactCreated",
    "contextCompacted",
    "usage",
    "turnCompleted",
    "notice",
}
# Inside OpenAI messages the names are OpenAI's own (snake_case), so real transcripts import unchanged.
OPENAI_SHAPES = {"OpenAIMessage", "OpenAIToolCall", "OpenAIFunction"}


def defs() -> dict:
    return schema.build_schema()["$defs"]


def fields(type_: type) -> set[str]:
    return set(defs()[type_.__name__].get("properties", {}))


def test_schema_json_is_fresh():
    """Fails when a Struct changed without ``python -m protocol.schema``."""
    committed = schema.SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == schema.render(), "protocol/schema.json is stale: run `python -m protocol.schema`"


def test_protocol_never_imports_server():
    code = "import protocol, protocol.schema, sys; assert not any(m.startswith('server') for m in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_every_protocol_md_method_is_in_the_table_with_its_fields():
    assert set(PROTOCOL_MD) <= set(METHODS)
    for name, (params, result) in PROTOCOL_MD.items():
        spec = METHODS[name]
        assert params <= fields(spec.params), name
        assert result <= fields(spec.result), name


def test_listed_session_and_search_hit_and_transcript_item_carry_protocol_md_fields():
    assert {"sessionId", "title", "cwd", "createdAt", "updatedAt", "messageCount"} <= fields(messages.SessionInfo)
    assert {"sessionId", "seq", "role", "snippet"} <= fields(messages.SearchHit)
    assert {"seq", "role", "content", "toolCalls", "toolCallId"} <= fields(messages.TranscriptItem)
    assert {"mimeType", "data"} <= fields(messages.Image)


def test_session_update_kinds_approval_and_initialization_options_match_protocol_md():
    assert {"sessionUpdate": updates.SessionUpdate} == NOTIFICATIONS
    kinds = {t.__struct_config__.tag for t in updates.AnyUpdate.__args__}
    assert kinds >= UPDATE_KINDS
    assert {"sessionId", "turnId", "seq", "update"} <= fields(updates.SessionUpdate)
    assert {"mode", "beforeTokens", "afterTokens", "summary"} <= fields(updates.ContextCompacted)
    assert fields(updates.ContextCompacting) == {"kind", "trigger", "beforeTokens"}  # starts, before the work
    assert {"contextTokens", "contextWindowTokens", "inputTokens", "outputTokens"} <= fields(updates.Usage)
    params, result = SERVER_REQUESTS["requestApproval"]
    assert {"sessionId", "turnId", "toolCallId", "tool", "title", "detail", "options"} <= fields(params)
    assert fields(result) == {"decision"}
    assert updates.RequestApprovalParams("s", "t", "c", "run_command", "x", "y").options == [
        "allowOnce",
        "allowAlways",
        "reject",
    ]
    assert {"baseUrl", "apiKey", "model", "contextWindowTokens"} <= fields(updates.ProviderOptions)


def test_stop_reasons_and_view_modes_are_protocol_md_values():
    assert set(get_args(messages.StopReason)) == {"endTurn", "cancelled", "maxIterations", "error"}
    assert set(get_args(messages.ViewMode)) == {"full", "microcompacted", "summarized", "fallback"}


def test_every_wire_name_outside_openai_shapes_is_camel_case():
    camel = re.compile(r"^[a-z][a-zA-Z0-9]*$")
    for name, definition in defs().items():
        if name in OPENAI_SHAPES:
            continue
        for prop in definition.get("properties", {}):
            assert camel.match(prop), f"{name}.{prop}"


def test_openai_tool_call_is_encoded_with_type_function():
    call = msgspec.convert({"id": "c1", "function": {"name": "f", "arguments": "{}"}}, messages.OpenAIToolCall)
    assert msgspec.to_builtins(call) == {"id": "c1", "function": {"name": "f", "arguments": "{}"}, "type": "function"}


def test_session_update_round_trips_through_json_with_its_kind_tag():
    update = updates.SessionUpdate(
        session_id="ses_1",
        turn_id="turn_1",
        seq=4,
        update=updates.ContextCompacted(
            mode="summarized", before_tokens=60000, after_tokens=12000, summary="[compressed conversation context] ..."
        ),
    )
    wire = msgspec.json.decode(msgspec.json.encode(update))
    assert wire == {
        "sessionId": "ses_1",
        "turnId": "turn_1",
        "seq": 4,
        "update": {
            "kind": "contextCompacted",
            "mode": "summarized",
            "beforeTokens": 60000,
            "afterTokens": 12000,
            "summary": "[compressed conversation context] ...",
        },
    }
    assert msgspec.convert(wire, updates.SessionUpdate) == update
