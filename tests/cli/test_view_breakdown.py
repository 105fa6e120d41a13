"""``threadline view --breakdown``'s bar and compaction lines (the pure printing half)."""

from __future__ import annotations

import io

import msgspec

from protocol.messages import ContextViewResult
from server.cli.view import BAR_WIDTH, breakdown_bar, print_breakdown, print_view

PARTS = {
    "systemPrompt": 600,
    "projectContext": 0,
    "toolDefinitions": 1300,
    "summary": 900,
    "messages": 5000,
    "placeholders": 20,
    "free": 56180,
}


def test_the_bar_has_one_cell_per_part_share_and_never_hides_a_part():
    bar = breakdown_bar(PARTS)
    assert len(bar) == BAR_WIDTH + 2 and bar.count("p") == 1 and "P" not in bar
    assert bar.startswith("[S") and bar.endswith(".]") and bar.count("M") == 5000 * BAR_WIDTH // 64000


def test_the_compactions_are_listed_oldest_first_with_trigger_and_focus():
    view = {
        "messages": [],
        "keepRecentTokens": 8000,
        "compactedToolOutputs": 0,
        "transcriptMessages": 40,
        "contextWindowTokens": 64000,
        "estimatedTokens": 6520,
        "reservedTokens": 1300,
        "mode": "summarized",
        "thresholdTokens": 50160,
        "breakdown": PARTS,
        "compactions": [
            {
                "eventId": 7,
                "at": "2026-12-04T18:43:06.397Z",
                "mode": "summarized",
                "trigger": "auto",
                "beforeTokens": 52000,
                "afterTokens": 9000,
            },
            {
                "eventId": 9,
                "at": "2026-12-04T18:50:00.000Z",
                "mode": "summarized",
                "trigger": "manual",
                "beforeTokens": 12000,
                "afterTokens": 6000,
                "focus": "the API",
            },
        ],
    }
    out = io.StringIO()
    print_breakdown(msgspec.convert(view, ContextViewResult), out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("context 7.8k of 64k tokens (12%)")
    assert lines[9] == "2 compactions"
    assert lines[10].split()[:4] == ["#7", "2026-12-04T18:43:06.397Z", "auto", "summarized"]
    assert lines[11].endswith("focus: the API") and "manual" in lines[11]


def test_B_BUDGET_1_threadline_view_prints_the_budget_line():
    view = {
        "messages": [],
        "keepRecentTokens": 8000,
        "compactedToolOutputs": 0,
        "transcriptMessages": 40,
        "contextWindowTokens": 1_000_000,
        "estimatedTokens": 6520,
        "reservedTokens": 1300,
        "mode": "full",
        "thresholdTokens": 800_000,
        "breakdown": {
            **PARTS,
            "cleared": [{"toolCallId": "c1", "tool": "read_file", "tokens": 4400, "reason": "rent over break"}],
        },
        "budget": {"tokens": 60_000, "source": "config", "reason": "[context] budget = 60000: ..."},
    }
    for printer in (print_view, print_breakdown):
        out = io.StringIO()
        printer(msgspec.convert(view, ContextViewResult), out)
        assert "budget 60k tokens (config), 1 old tool output cleared: [context] budget = 60000" in out.getvalue()
