"""``threadline eval`` against the model double: the plumbing and the scoring, not a model's memory.

Runs the real command on recorded sessions against two doubles (``tests/fakes/fake_provider.py``, real HTTP and
SSE): one that answers every probe with the whole view it was given (a model that forgets nothing it was shown) and
one that answers "I don't know". What it shows is what each strategy's view still holds and that the scores tell
the two apart; bench/PROBES.md has the committed output. A real model's results need a real provider: run
``threadline eval`` itself (bench/PROBES.md says how).

    .venv/bin/python -m bench.probes
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from server.cli.eval_views import COMPACTION_PROMPT
from server.context.micro import content_text
from tests.fakes.fake_provider import FakeProvider

REPO = Path(__file__).resolve().parent.parent
SESSIONS = (
    ("kimi-cli-entire__29_77bc73228c_1__full.json", 8_000, 10),
    ("mini-swe-agent-pr816__deepseek_chat_dev_rerun__pylint-dev__astroid-1333.json", 16_000, 3),
)


def _text(message: dict) -> str:
    """A message as a model would repeat it: its text and its tool calls (name and arguments)."""
    calls = [f"{c['function']['name']} {c['function']['arguments']}" for c in message.get("tool_calls") or []]
    return "\n".join([content_text(message.get("content")), *calls])


def whole_view(messages: list[dict]) -> str:
    if messages[-1].get("content") == COMPACTION_PROMPT:  # its summary: the latest three messages, verbatim
        return "\n".join(_text(m) for m in messages[-4:-1])
    return "\n".join(_text(m) for m in messages)


DOUBLES = {"remembers the whole view": whole_view, 'answers "I don\'t know"': lambda messages: "I don't know."}


def run(session: str, window: int, points: int, answer) -> dict:
    with FakeProvider(answer=answer) as fake, tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
        env.update(THREADLINE_HOME=home, THREADLINE_BASE_URL=fake.url, THREADLINE_MODEL="fake-model")
        path = REPO / "data" / "trajectories" / session
        command = [
            str(Path(sys.executable).parent / "threadline"),
            "eval",
            str(path),
            "--context-window",
            str(window),
            "--points",
            str(points),
            "--json",
        ]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout)


def table(result: dict) -> str:
    probes = list(next(iter(result["strategies"].values()))["probes"])
    lines = [
        "| strategy | " + " | ".join(f"{p} (n)" for p in probes) + " | tokens in | tokens out |",
        "|---" * (len(probes) + 3) + "|",
    ]
    for name, s in result["strategies"].items():
        cells = [
            "-" if s["probes"][p]["score"] is None else f"{s['probes'][p]['score']:.2f} ({s['probes'][p]['n']})"
            for p in probes
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {s['inputTokens']:,} | {s['outputTokens']:,} |")
    return "\n".join(lines)


def main() -> None:
    for session, window, points in SESSIONS:
        for label, answer in DOUBLES.items():
            result = run(session, window, points, answer)
            print(f"\n**{session}** at {window:,} tokens, points {result['points']}, the double {label}\n")
            print(table(result))


if __name__ == "__main__":
    main()
