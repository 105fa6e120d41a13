"""Replaying a recorded session through the real server and loop (``threadline replay``, ``threadline demo``).

``threadline replay`` starts an ordinary server with ``THREADLINE_REPLAY_FILE`` set. Its runtime then takes its
models from ``ReplayModels`` (chosen once, at start): a ``ReplayProvider`` answers each model call with the next
recorded assistant message, and each turn's tool runner hands back the recorded result of the call: no model is asked and no tool runs. Everything
between (request views, compaction, events, storage, notifications) is exactly what a live run does.

A recording is an OpenAI message list. Leading system messages become the session's start; each user message
starts a turn; the assistant messages after it are that turn's answers. Where the recording has no assistant
answer before the next user message (the user steered or interrupted mid-turn, or the file ends), the replayed
model answers with an empty message so the turn ends the way a live turn would.
"""

from __future__ import annotations

import inspect
import json
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.context.failures import is_failure
from server.providers import ChatResult, OnEvent, TextDelta, ToolCall
from server.providers.capabilities import Price, price_for
from server.recording import REPLAY_ENV, REQUESTS_OUT_ENV, RecordedAnswer, ReplayPlan, load_recording, plan_replay
from server.tools import ToolContext, ToolOutcome, ToolRunner

if TYPE_CHECKING:
    from server.config import Settings
    from server.transcript import StoredSession

__all__ = [
    "REPLAY_ENV",
    "REQUESTS_OUT_ENV",
    "RecordedAnswer",
    "ReplayModels",
    "ReplayPlan",
    "ReplayProvider",
    "load_recording",
    "plan_replay",
    "replay_models",
]

NO_RESULT = "[no tool result recorded]"


def _arg_key(name: str, args: Any) -> tuple[str, str]:
    return name, json.dumps(args, sort_keys=True, ensure_ascii=False)


class ReplayProvider:
    """Answers model calls from a recording, and runs tool calls by returning their recorded results."""

    model = "replay"

    def __init__(self, plan: ReplayPlan, requests_out: Path | None = None):
        answers: deque[RecordedAnswer] = deque()
        for _, turn_answers in plan.turns:
            answers.extend(turn_answers)
            if not turn_answers or turn_answers[-1].tool_calls:
                answers.append(RecordedAnswer(""))  # the loop asks once more after the last results: end the turn
        self._answers = answers
        self._results: dict[tuple[str, str], deque[str]] = {}
        self._requests_out = requests_out
        self.calls = 0

    def _write_request(self, messages: list[dict[str, Any]]) -> None:
        """One JSON line per model call: the messages exactly as this provider received them (after clipping).

        Appended and closed per call, so a reader sees every finished call even if the server is killed.
        """
        line = json.dumps({"step": self.calls, "messages": messages}, ensure_ascii=False)
        with open(self._requests_out, "a", encoding="utf-8") as out:  # type: ignore[arg-type]
            out.write(line + "\n")

    async def stream_chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_event: OnEvent | None,
        *,
        cache_key: str | None = None,
    ) -> ChatResult:
        self.calls += 1
        if self._requests_out is not None:
            self._write_request(messages)
        answer = self._answers.popleft() if self._answers else RecordedAnswer("")
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
        return ChatResult(
            content=answer.content,
            tool_calls=[ToolCall(c.id, c.name, c.arguments) for c in answer.tool_calls],
            finish_reason="tool_calls" if answer.tool_calls else "stop",
        )

    async def run_tool(self, ctx: ToolContext | None, name: str, args: dict[str, Any]) -> ToolOutcome:
        """The recorded result of the next call with this name and these arguments (nothing runs, so ``ctx`` is
        not needed)."""
        queue = self._results.get(_arg_key(name, args))
        content = queue.popleft() if queue else NO_RESULT
        return ToolOutcome(content, "error" if is_failure(content, name) else "ok")  # as the recording ended

    async def aclose(self) -> None:
        return None


class ReplayModels:
    """The model source of a replaying server (``server.agent.models.ModelSource``): one recording answers every
    call of every session (its ``run_tool`` hands back the recorded tool results; the runtime passes it on)."""

    def __init__(self, provider: ReplayProvider):
        self.replay = provider

    @property
    def run_tool(self) -> ToolRunner:
        return self.replay.run_tool

    def provider(self, settings: Settings, session: StoredSession | None) -> ReplayProvider:
        return self.replay

    def price(self, settings: Settings, session: StoredSession | None) -> Price | None:
        return settings.provider.price or price_for(self.replay.model)

    async def aclose(self) -> None:
        await self.replay.aclose()


def replay_models(env: Mapping[str, str]) -> ReplayModels | None:
    """A replaying server's model source when it was started with ``THREADLINE_REPLAY_FILE``, else None. Read
    once, when the server starts (``Runtime``)."""
    path = env.get(REPLAY_ENV)
    if not path:
        return None
    out = env.get(REQUESTS_OUT_ENV)
    return ReplayModels(ReplayProvider(plan_replay(load_recording(Path(path))), Path(out) if out else None))
