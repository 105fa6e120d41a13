"""Wire text in one place: the compaction text is defined in protocol/wire_text.py and nowhere else.

The server's pipeline, the CLI and the VS Code extension (through schema.json's ``wireText`` and the generated
``WIRE_TEXT``) use it from there, so a client cannot drift from what the server writes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from protocol.wire_text import MICROCOMPACTION_PREFIX, PLACEHOLDER_PREFIX, SUMMARY_HEADER, placeholder, wire_text
from server.context import microcompact
from server.context.summary import render_summary
from server.context.summary_state import SummaryState, summary_feed
from tests.harness import REPO

LITERALS = (
    "[old tool output compacted",
    "[compressed conversation context]",
    "Older transcript messages were",
    "[microcompaction]",
)
# Where the text may be spelled out: its definition and the files generated from it.
GENERATED = {"protocol/wire_text.py", "protocol/schema.json", "editors/vscode/src/rpc/protocol.generated.ts"}


def test_R_MICRO_1_R_SUM_2_the_wire_text_is_spelled_out_only_in_protocol():
    spelled = sorted(
        str(path.relative_to(REPO))
        for top in ("server", "protocol", "editors/vscode/src", "editors/nvim")
        for path in (REPO / top).rglob("*")
        if path.suffix in {".py", ".ts", ".lua"}
        and str(path.relative_to(REPO)) not in GENERATED
        and any(text in path.read_text(encoding="utf-8") for text in LITERALS)
    )
    assert spelled == [], f"compaction text written out instead of imported from protocol.wire_text: {spelled}"


def test_R_MICRO_1_placeholder_and_summary_header_read_as_the_rules_say():
    assert placeholder(18432) == "[old tool output compacted: 18432 characters]"
    assert SUMMARY_HEADER == "[compressed conversation context]\nOlder transcript messages were summarized."
    assert MICROCOMPACTION_PREFIX == "[microcompaction]"


def test_the_pipeline_writes_the_protocols_text():
    """What the server's pipeline produces starts with the protocol's constants (not a copy of them)."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 5_000},
        {"role": "assistant", "content": "done"},
    ]
    compacted, replaced = microcompact(messages, tail_start=3)
    assert replaced == 1 and compacted[2]["content"] == placeholder(5_000)
    assert compacted[2]["content"].startswith(PLACEHOLDER_PREFIX)
    state = SummaryState()
    for msg in messages:
        state = summary_feed(state, msg)
    assert render_summary(state).startswith(SUMMARY_HEADER + "\n")


def test_schema_json_carries_the_wire_text_for_editors():
    schema = json.loads((REPO / "protocol" / "schema.json").read_text(encoding="utf-8"))
    assert schema["wireText"] == wire_text()
    generated = (REPO / "editors" / "vscode" / "src" / "rpc" / "protocol.generated.ts").read_text(encoding="utf-8")
    for name, value in wire_text().items():
        assert re.search(rf"^  {name}: {re.escape(json.dumps(value))},$", generated, re.M), name


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
