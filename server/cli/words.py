"""What ``threadline chat`` says to a person: how a turn ended, in plain words, and what to do about a failure.

The server's ``TurnError`` says what went wrong (its ``code`` is a provider failure kind, ``noProvider`` or
``maxIterations``, and its message names the URL or model involved); the hint here says what the user can do
next, since only the client knows it is talking to a person at a terminal.
"""

from __future__ import annotations

from typing import Any

KEY_VARIABLE = "THREADLINE_API_KEY"
HINTS = {
    "auth": f"set {KEY_VARIABLE} (or the variable config.toml's api_key_env names) to a valid key, then start "
    "the chat again (--resume picks this session up)",
    "connection": "is the model server running and listening there? THREADLINE_BASE_URL (or [provider] base_url in "
    "config.toml) must point at it",
    "timeout": "the model server did not answer in time: send the message again, or check the server",
    "model_not_found": "check the model name (THREADLINE_MODEL, or [provider] model); /model lists the configured "
    "ones and /model NAME switches",
    "not_found": "check the base URL (THREADLINE_BASE_URL, or [provider] base_url): it must be the server's API "
    "root, usually ending in /v1",
    "outputLimit": "raise max_output_tokens ([provider] in config.toml), or ask for less at once",
    "context_too_long": "/compact makes room (with a focus: /compact keep the API decisions), then send it again",
    "too_large": "/compact makes room, then send it again",
    "rate_limited": "the provider is limiting requests: wait a little and send the message again",
    "server": "the provider failed: send the message again",
    "stream_cut": "the answer was cut off: send the message again",
    "maxIterations": "send a message to let it go on (the limit is per turn)",
}


def turn_words(result: dict[str, Any]) -> str:
    """A ``submitTurn`` result in plain words: done, cancelled, stopped at the iteration limit, failed: why."""
    stop, error = result.get("stopReason"), result.get("error") or {}
    if stop == "endTurn":
        return "done"
    if stop == "cancelled":
        return "cancelled"
    if stop == "maxIterations":
        return f"stopped at the iteration limit ({error.get('message') or 'too many model calls in one turn'})"
    return f"failed: {error.get('message') or 'the server gave no reason'}"


def hint(result: dict[str, Any]) -> str | None:
    """What to do about a turn that did not end normally; None when the words say it all."""
    return HINTS.get(str((result.get("error") or {}).get("code")))


def startup_hint(exc: BaseException, log: object) -> str:
    """The server this chat starts could not be reached: what to check."""
    return (
        f"the Threadline server ended before the chat could start ({exc}): its reason is at the end of {log} "
        "(a config.toml error is the usual cause)"
    )
