"""Replaying a recorded session through the real server and loop (``threadline replay``, ``threadline demo``).

``threadline replay`` starts an ordinary server with ``THREADLINE_REPLAY_FILE`` set. Then ``provider_for``
returns a ``ReplayProvider`` that answers each model call with the next recorded assistant message, and each
turn's tool runner hands back the recorded result of the call: no model is asked and no tool runs. Everything
between (request views, compaction, events, storage, notifications) is exactly what a live run does.

A recording is an OpenAI message list. Leading system messages become the session's start; each user message
starts a turn; the assistant messages after it are that turn's answers. Where the recording has no assistant
answer before the next user message (the user steered or interrupted mid-turn, or the file ends), the replayed
model answers with an empty message so the turn ends the way a live turn would.
"""

from __future__ import annotations

import inspect
import json
import os
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.context.micro import content_text as content_text_of, is_error_evidence
from server.providers import ChatResult, TextDelta, ToolCall
from server.tools import ToolContext, ToolOutcome

if TYPE_CHECKING:
    from server.runtime import Runtime

__all__ = ["REPLAY_ENV", "REQUESTS_OUT_ENV", "Answer", "ReplayPlan", "ReplayProvider", "load_recording", "plan_replay",
           "replay_provider"]

REPLAY_ENV = "THREADLINE_REPLAY_FILE"
REQUESTS_OUT_ENV = "THREADLINE_REPLAY_REQUESTS_OUT"  # with it, every request is written out (--requests-out)
NO_RESULT = "[no tool result recorded]"


@dataclass(frozen=True)
class Answer:
    """One recorded assistant message and the recorded results of its tool calls (by call id)."""

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    results: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReplayPlan:
    systems: list[str]  # leading system messages: imported as the session's start
    turns: list[tuple[str, list[Answer]]]  # (user text, answers) per user message
    skipped: int = 0  # messages the replay cannot place (a system message mid-way, answers before any user)


def load_recording(path: Path) -> list[dict[str, Any]]:
    """An OpenAI-message JSON file: a list of messages, or an object with a ``messages`` list."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = data.get("messages")
    if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
        raise ValueError(f"{path} holds no list of messages")
    return data


def _tool_calls(msg: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    calls = []
    for call in msg.get("tool_calls") or ():
        fn = call.get("function") or {}
        args = fn.get("arguments")
        calls.append(ToolCall(str(call.get("id") or ""), str(fn.get("name") or ""),
                              args if isinstance(args, str) else json.dumps(args or {})))
    return tuple(calls)


def plan_replay(messages: Sequence[Mapping[str, Any]]) -> ReplayPlan:
    """Split a recording into the session's start and one (user text, answers) pair per user message."""
    systems: list[str] = []
    turns: list[tuple[str, list[Answer]]] = []
    skipped = 0
    i = 0
    while i < len(messages) and messages[i].get("role") in ("system", "developer"):
        systems.append(content_text_of(messages[i].get("content")))
        i += 1
    for j in range(i, len(messages)):
        msg = messages[j]
        role = msg.get("role")
        if role == "user":
            turns.append((content_text_of(msg.get("content")), []))
        elif role == "assistant" and turns:
            calls = _tool_calls(msg)
            ids = {c.id for c in calls}
            results: dict[str, str] = {}
            for later in messages[j + 1:]:
                if later.get("role") != "tool":
                    break
                call_id = later.get("tool_call_id")
                if call_id in ids and call_id not in results:
                    results[call_id] = content_text_of(later.get("content"))
            turns[-1][1].append(Answer(content_text_of(msg.get("content")), calls, results))
        elif role != "tool":
            skipped += 1  # tool results travel with their answer; anything else has no place in a replay
    return ReplayPlan(systems, turns, skipped)


def _arg_key(name: str, args: Any) -> tuple[str, str]:
    return name, json.dumps(args, sort_keys=True, ensure_ascii=False)


class ReplayProvider:
    """Answers model calls from a recording, and runs tool calls by returning their recorded results."""

    model = "replay"

    def __init__(self, plan: ReplayPlan, requests_out: Path | None = None):
        answers: deque[Answer] = deque()
        for _, turn_answers in plan.turns:
            answers.extend(turn_answers)
            if not turn_answers or turn_answers[-1].tool_calls:
                answers.append(Answer(""))  # the loop asks once more after the last results: end the turn
        self._answers = answers
        self._results: dict[tuple[str, str], deque[str]] = {}
        self._requests_out = requests_out
        self.calls = 0

    def _write_request(self, messages: list[dict]) -> None:
        """One JSON line per model call: the messages exactly as this provider received them (after clipping).

        Appended and closed per call, so a reader sees every finished call even if the server is killed.
        """
        line = json.dumps({"step": self.calls, "messages": messages}, ensure_ascii=False)
        with open(self._requests_out, "a", encoding="utf-8") as out:  # type: ignore[arg-type]
            out.write(line + "\n")

    async def stream_chat(self, messages: list[dict], tools: list[dict] | None, on_event, *,
                          cache_key: str | None = None) -> ChatResult:
        self.calls += 1
        if self._requests_out is not None:
            self._write_request(messages)
        answer = self._answers.popleft() if self._answers else Answer("")
        for call in answer.tool_calls:
            try:
                args = json.loads(call.arguments or "{}")
            except ValueError:
                continue  # the loop answers an unparsable call itself, without the runner
            result = answer.results.get(call.id, NO_RESULT)
            self._results.setdefault(_arg_key(call.name, args), deque()).append(result)
        if answer.content and on_event is not None:
            sent = on_event(TextDelta(answer.content))
            if inspect.isawaitable(sent):
                await sent
        return ChatResult(content=answer.content, tool_calls=list(answer.tool_calls),
                          finish_reason="tool_calls" if answer.tool_calls else "stop")

    async def run_tool(self, ctx: ToolContext, name: str, args: dict[str, Any]) -> ToolOutcome:
        """The recorded result of the next call with this name and these arguments (nothing runs)."""
        queue = self._results.get(_arg_key(name, args))
        content = queue.popleft() if queue else NO_RESULT
        return ToolOutcome(content, "error" if is_error_evidence(content) else "ok")

    async def aclose(self) -> None:
        return None


def replay_provider(rt: Runtime) -> ReplayProvider | None:
    """The server's replay provider when it was started with ``THREADLINE_REPLAY_FILE``, else None."""
    path = os.environ.get(REPLAY_ENV)
    if not path:
        return None
    key = ("replay", path)
    if key not in rt.providers:
        out = os.environ.get(REQUESTS_OUT_ENV)
        rt.providers[key] = ReplayProvider(plan_replay(load_recording(Path(path))), Path(out) if out else None)
    return rt.providers[key]
