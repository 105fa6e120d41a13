"""A recorded session (an OpenAI message list) split into what a replay needs: the session's start and, per
user message, the recorded answers with their tool results.

Pure (no I/O but reading the file): the server's replay provider (``server.replay``) answers from this plan, and
the client driving a replay (``server.cli.replay_run``) submits its user messages, so both read a recording alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.context.micro import content_text

__all__ = [
    "REPLAY_ENV",
    "REQUESTS_OUT_ENV",
    "RecordedAnswer",
    "RecordedCall",
    "ReplayPlan",
    "load_recording",
    "plan_replay",
]

REPLAY_ENV = "THREADLINE_REPLAY_FILE"
REQUESTS_OUT_ENV = "THREADLINE_REPLAY_REQUESTS_OUT"  # with it, every request is written out (--requests-out)


@dataclass(frozen=True)
class RecordedCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model sent it


@dataclass(frozen=True)
class RecordedAnswer:
    """One recorded assistant message and the recorded results of its tool calls (by call id)."""

    content: str
    tool_calls: tuple[RecordedCall, ...] = ()
    results: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReplayPlan:
    systems: list[str]  # leading system messages: imported as the session's start
    turns: list[tuple[str, list[RecordedAnswer]]]  # (user text, answers) per user message
    skipped: int = 0  # messages the replay cannot place (a system message mid-way, answers before any user)


ROLES = ("system", "developer", "user", "assistant", "tool")  # the OpenAI message roles a recording may hold


def load_recording(path: Path) -> list[dict[str, Any]]:
    """An OpenAI-message JSON file: a list of messages, or an object with a ``messages`` list. ``ValueError`` in
    one sentence naming the file when it is missing, a folder, empty, not JSON, or not such a list."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{path} is a folder: give an OpenAI-message JSON file") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not JSON (not UTF-8 text)") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not text.strip():
        raise ValueError(f"{path} is empty: give an OpenAI-message JSON file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ValueError(f"{path} is not JSON this reader takes: nested too deeply") from None
    if isinstance(data, dict):
        data = data.get("messages")
    if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
        raise ValueError(f"{path} holds no list of messages")
    for i, msg in enumerate(data, 1):
        if msg.get("role") not in ROLES:
            raise ValueError(
                f"{path}: message {i} has role {msg.get('role')!r}; a message's role is one of {', '.join(ROLES)}"
            )
    return data


def _tool_calls(msg: Mapping[str, Any]) -> tuple[RecordedCall, ...]:
    calls = []
    for call in msg.get("tool_calls") or ():
        fn = call.get("function") or {}
        args = fn.get("arguments")
        calls.append(
            RecordedCall(
                str(call.get("id") or ""),
                str(fn.get("name") or ""),
                args if isinstance(args, str) else json.dumps(args or {}),
            )
        )
    return tuple(calls)


def plan_replay(messages: Sequence[Mapping[str, Any]]) -> ReplayPlan:
    """Split a recording into the session's start and one (user text, answers) pair per user message."""
    systems: list[str] = []
    turns: list[tuple[str, list[RecordedAnswer]]] = []
    skipped = 0
    i = 0
    while i < len(messages) and messages[i].get("role") in ("system", "developer"):
        systems.append(content_text(messages[i].get("content")))
        i += 1
    for j in range(i, len(messages)):
        msg = messages[j]
        role = msg.get("role")
        if role == "user":
            turns.append((content_text(msg.get("content")), []))
        elif role == "assistant" and turns:
            calls = _tool_calls(msg)
            ids = {c.id for c in calls}
            results: dict[str, str] = {}
            for later in messages[j + 1 :]:
                if later.get("role") != "tool":
                    break
                call_id = later.get("tool_call_id")
                if call_id in ids and call_id not in results:
                    results[call_id] = content_text(later.get("content"))
            turns[-1][1].append(RecordedAnswer(content_text(msg.get("content")), calls, results))
        elif role != "tool":
            skipped += 1  # tool results travel with their answer; anything else has no place in a replay
    return ReplayPlan(systems, turns, skipped)
