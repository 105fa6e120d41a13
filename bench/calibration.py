"""How far the inspector's figures are from the provider's count (B-TOK-4), for providers counting differently from
our chars/4 estimate.

A real server over stdio and the model double counting ``factor`` x chars/4 (messages and tool definitions). Before
each turn the bench reads ``getContextView`` and takes ``estimatedTokens + reservedTokens``, the view's estimate of
the next request; the turn's request then arrives and the double reports its ``prompt_tokens``. The error is
``(shown - reported) / reported``; the first request (nothing learned yet, B-TOK-3 keeps it conservative) is
given apart from those after the first answer.

The request also carries the turn's new question, which no inspector can know before it is typed (here 50-360
tokens, growing turn by turn). So each turn is measured twice: against the whole request (``errors``), and against
what the view shows of it, the request without that last user message, counted by the double's own rule
(``view_errors``: how right the figures in the provider's tokens are, B-TOK-4).

    .venv/bin/python -m bench.calibration
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import tempfile
from pathlib import Path
from typing import Any

from tests.e2e.agent_support import API_KEY, running_agent
from tests.fakes.fake_provider import FakeProvider

FACTORS = (1.4, 1.2, 0.8)
TURNS = 8


async def one_factor(tmp: Path, factor: float) -> dict[str, Any]:
    home, folder = tmp / f"home-{factor}", tmp / f"ws-{factor}"
    folder.mkdir()
    errors: list[float] = []
    view_errors: list[float] = []
    with FakeProvider(api_key=API_KEY, token_factor=factor) as fake:
        async with running_agent(home, fake, THREADLINE_CONTEXT_WINDOW="200000") as agent:
            sid = await agent.session(folder)
            fake.push(
                *(
                    {"content": f"answer {i}: " + "the module reads its config file. " * (20 + 7 * i)}
                    for i in range(TURNS)
                )
            )
            for i in range(TURNS):
                view = await agent.client.request("getContextView", {"sessionId": sid})
                shown = view["estimatedTokens"] + view["reservedTokens"]
                answer = await agent.turn(sid, f"question {i}: " + "why does it fail? " * (10 + 9 * i))
                assert answer["stopReason"] == "endTurn", answer
                request = fake.requests[-1]
                reported = request["usage"]["prompt_tokens"]
                errors.append((shown - reported) / reported)
                body = request["body"]
                assert body["messages"][-1]["role"] == "user", body["messages"][-1]
                without_question = math.ceil(
                    factor
                    * (
                        len(json.dumps(body["messages"][:-1], ensure_ascii=False))
                        + len(json.dumps(body.get("tools") or []))
                    )
                    / 4
                )
                view_errors.append((shown - without_question) / without_question)
            calibration = (await agent.client.request("getContextView", {"sessionId": sid}))["calibration"]
    after = [abs(e) for e in errors[1:]]
    view_after = [abs(e) for e in view_errors[1:]]
    return {
        "factor": factor,
        "first_request_error": round(errors[0], 3),
        "after_first_answer_median_abs_error": round(statistics.median(after), 3),
        "after_first_answer_max_abs_error": round(max(after), 3),
        "errors": [round(e, 3) for e in errors],
        "view_after_first_answer_median_abs_error": round(statistics.median(view_after), 3),
        "view_after_first_answer_max_abs_error": round(max(view_after), 3),
        "view_errors": [round(e, 3) for e in view_errors],
        "learned": calibration,
    }


async def bench_calibration() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="threadline-bench-cal-") as tmp:
        return [await one_factor(Path(tmp), f) for f in FACTORS]


if __name__ == "__main__":
    print(json.dumps(asyncio.run(bench_calibration()), indent=1))
