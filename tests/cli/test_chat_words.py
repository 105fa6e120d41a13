"""A turn's end in plain words, and what to do about a failure."""

from __future__ import annotations

from server.cli.words import hint, turn_words


def test_issue_38_each_stop_reason_reads_as_plain_words():
    assert turn_words({"stopReason": "endTurn"}) == "done"
    assert turn_words({"stopReason": "cancelled"}) == "cancelled"
    limit = {"stopReason": "maxIterations", "error": {"code": "maxIterations", "message": "stopped after 50 calls"}}
    assert turn_words(limit) == "stopped at the iteration limit (stopped after 50 calls)"
    failed = {"stopReason": "error", "error": {"code": "connection", "message": "Could not connect to http://x/v1"}}
    assert turn_words(failed) == "failed: Could not connect to http://x/v1"


def test_issue_38_failures_come_with_what_to_do():
    def said(code: str) -> str | None:
        return hint({"stopReason": "error", "error": {"code": code, "message": "m"}})

    assert "THREADLINE_API_KEY" in (said("auth") or "")
    assert "THREADLINE_BASE_URL" in (said("connection") or "")
    assert "/compact" in (said("context_too_long") or "")
    assert said("noProvider") is None  # its message already says what to set
    assert hint({"stopReason": "endTurn"}) is None


def test_issue_38_the_sandbox_is_said_in_words_and_an_escape_first():
    import io

    from server.cli.chat import Printer, sandbox_words

    assert sandbox_words({"mode": "read-only", "enforced": True, "network": False}) == "sandbox read-only, no network"
    unenforced = {"mode": "workspace-write", "enforced": False, "reason": "no Landlock"}
    assert "NOT enforced here (no Landlock)" in sandbox_words(unenforced)
    out = io.StringIO()
    Printer(out).approval({"tool": "run_command", "title": "Run: make", "detail": "make", "outsideSandbox": True})
    assert out.getvalue().startswith("!! this command would run OUTSIDE the sandbox")
