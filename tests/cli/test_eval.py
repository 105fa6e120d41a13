"""``threadline eval``: the real command, a real replaying server and the strict model double."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from server.cli.eval_probes import PROBES, Expected, expected_answers, key_terms, score
from server.cli.eval_views import COMPACTION_PROMPT, SUMMARY_PREFIX, CodexStyle, reserve, system_prefix
from server.cli.replay_run import replay_file
from server.context import estimate_message_tokens
from server.context.micro import content_text
from server.context.repair import repair_tool_pairing
from tests.conftest import KIMI, load_trajectory
from tests.fakes.fake_provider import FakeProvider
from tests.harness import API_KEY, KINDS, REPO, server_env

THREADLINE = REPO / ".venv" / "bin" / "threadline"
WINDOW = 8_000
SUMMARY = "SUMMARY-OF-THE-DOUBLE: the user wants the make targets fixed."


def _text(message: dict) -> str:
    """A message as a model would repeat it: its text and its tool calls (name and arguments)."""
    calls = [f"{c['function']['name']} {c['function']['arguments']}" for c in message.get("tool_calls") or []]
    return "\n".join([content_text(message.get("content")), *calls])


def _whole_view(messages: list[dict]) -> str:
    """A double that remembers everything: it answers with the whole view it was given (a short summary when it
    is asked to compact, as a model would)."""
    if messages[-1].get("content") == COMPACTION_PROMPT:
        return SUMMARY
    return "\n".join(_text(m) for m in messages)


def _run(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(THREADLINE), *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def _eval(fake: FakeProvider, home: Path, *extra: str) -> subprocess.CompletedProcess:
    args = ["eval", str(KIMI), "--context-window", str(WINDOW), "--json", *extra]
    return _run(args, server_env(home, fake.url))


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """One eval of the kimi-cli session at 8K against the remembering double, with --out."""
    tmp = tmp_path_factory.mktemp("eval")
    with FakeProvider(answer=_whole_view) as fake:
        result = _eval(fake, tmp / "home", "--out", str(tmp / "out"))
        requests = [r["body"]["messages"] for r in fake.requests]
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), tmp, requests


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """What ``threadline replay --requests-out`` runs (``replay_file``), on the same session at the same window."""
    out = tmp_path_factory.mktemp("replay") / "requests.jsonl"
    report = asyncio.run(replay_file(KIMI, WINDOW, requests_out=out))
    requests = [json.loads(line)["messages"] for line in out.read_text(encoding="utf-8").splitlines()]
    return report, requests


def _kept(tmp: Path, step: int, strategy: str, probe: str) -> dict:
    return json.loads((tmp / "out" / f"step-{step}" / f"{strategy}-{probe}.json").read_text(encoding="utf-8"))


def test_issue37_the_points_are_the_first_three_compaction_steps(whole, replayed):
    result, _, _ = whole
    report, _ = replayed
    compacted = [i for i, step in enumerate(report.steps, 1) if step.compacted]
    assert len(compacted) > 3
    assert result["points"] == compacted[:3]


def test_issue37_the_threadline_view_equals_replays_request_at_the_step(whole, replayed):
    result, tmp, _ = whole
    _, requests = replayed
    for step in result["points"]:
        for probe in PROBES:
            kept = _kept(tmp, step, "threadline", probe)
            assert kept["messages"][:-1] == requests[step - 1], (step, probe)
            assert kept["messages"][-1]["role"] == "user"


def test_issue37_the_naive_view_is_the_latest_transcript_within_the_window(whole, replayed):
    result, tmp, _ = whole
    report, requests = replayed
    system = system_prefix(requests[0])
    budget = WINDOW - reserve(WINDOW) - sum(estimate_message_tokens(m) for m in system)
    for step in result["points"]:
        view = _kept(tmp, step, "naive", "goal")["messages"][:-1]
        upto = report.transcript[: report.steps[step - 1].transcript_seq]
        history = repair_tool_pairing([m for m in upto if m["role"] != "system"])
        kept = view[len(system) :]
        assert view[: len(system)] == system
        assert kept == history[len(history) - len(kept) :]  # the latest messages, whole
        assert sum(estimate_message_tokens(m) for m in kept) <= budget
        cut = history[: len(history) - len(kept)]
        assert cut and sum(estimate_message_tokens(m) for m in [cut[-1], *kept]) > budget  # clipped, not cut short


def test_issue37_codex_style_calls_the_model_for_its_summary(whole):
    result, tmp, requests = whole
    summaries = [r for r in requests if r[-1].get("content") == COMPACTION_PROMPT]
    assert summaries, "the codex-style strategy never asked the model for a summary"
    kept = sorted((tmp / "out").glob("codex-style-summary-*.json"))
    assert len(kept) == len(summaries)
    for step in result["points"]:
        view = _kept(tmp, step, "codex-style", "goal")["messages"]
        assert {"role": "user", "content": SUMMARY_PREFIX + SUMMARY} in view
        assert sum(estimate_message_tokens(m) for m in view[:-1]) <= 0.9 * WINDOW
    # every call the double got is a probe or a summary: the summaries are counted with the strategy's tokens
    assert len(requests) == 3 * len(PROBES) * len(result["points"]) + len(summaries)
    codex, naive = result["strategies"]["codex-style"], result["strategies"]["naive"]
    assert codex["outputTokens"] > naive["outputTokens"] or codex["inputTokens"] > naive["inputTokens"]


def test_issue37_the_json_has_exactly_the_documented_shape(whole):
    result, _, _ = whole
    assert set(result) == {"points", "goals", "strategies"}
    assert [g["step"] for g in result["goals"]] == result["points"]
    assert set(result["strategies"]) == {"threadline", "codex-style", "naive"}
    for strategy in result["strategies"].values():
        assert set(strategy) == {"probes", "inputTokens", "outputTokens"}
        assert strategy["inputTokens"] > 0 and strategy["outputTokens"] > 0
        assert set(strategy["probes"]) == set(PROBES)
        for cell in strategy["probes"].values():
            assert set(cell) == {"score", "n"}
            assert cell["score"] is None or 0 <= cell["score"] <= 1


def test_issue37_the_scores_discriminate_a_model_that_remembers_from_one_that_does_not(whole, tmp_path):
    remembering, _, _ = whole
    with FakeProvider(answer=lambda messages: "I don't know.") as fake:
        result = _eval(fake, tmp_path / "home", "--strategy", "threadline")
    assert result.returncode == 0, result.stderr
    forgetting = json.loads(result.stdout)["strategies"]["threadline"]["probes"]
    knowing = remembering["strategies"]["threadline"]["probes"]
    scored = [p for p in PROBES if knowing[p]["n"]]
    assert len(scored) >= 2  # its goal ("make gen-* make check") has one key term: left to the judge (issue 50)
    for probe in scored:
        assert forgetting[probe]["score"] <= 0.1, probe  # "know" may be a key term of the expected text
        assert knowing[probe]["score"] >= forgetting[probe]["score"] + 0.5, probe


def test_issue37_stores_nothing_in_the_users_home(whole):
    _, tmp, _ = whole
    assert not (tmp / "home" / "threadline.db").exists()


def test_issue37_a_failing_provider_ends_with_a_clear_error(tmp_path):
    with FakeProvider(api_key="the-right-key") as fake:  # the run's key is another: every call is refused
        result = _eval(fake, tmp_path / "home")
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.startswith("threadline eval: the model call failed"), result.stderr
    assert "Traceback" not in result.stderr


def test_issue37_a_hanging_provider_ends_with_a_clear_error(tmp_path):
    with FakeProvider() as fake:
        fake.push(*[{"hang": True}] * 3)
        result = _eval(fake, tmp_path / "home", "--timeout", "3", "--strategy", "naive")
    assert result.returncode != 0
    assert "did not answer within 3 s" in result.stderr, result.stderr


def test_issue37_no_configured_model_is_a_clear_error(tmp_path):
    result = _run(["eval", str(KIMI), "--json"], server_env(tmp_path / "home"), timeout=60)
    assert result.returncode != 0
    assert result.stderr.startswith("threadline eval: no model is configured"), result.stderr


@pytest.mark.parametrize("kind", ["anthropic", "openai-responses"])
def test_issue37_runs_with_the_native_provider_kinds(kind, tmp_path):
    fake_class, path, read = KINDS[kind]
    with fake_class(api_key=API_KEY) as fake:
        env = server_env(tmp_path / "home", fake.url, THREADLINE_PROVIDER=kind)
        args = ["eval", str(KIMI), "--context-window", str(WINDOW), "--json", "--points", "1"]
        result = _run([*args, "--strategy", "threadline"], env)
        requests = [read(r["body"]) for r in fake.requests if r["path"].startswith(path)]
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["strategies"]["threadline"]["probes"]["state"]["n"] == 1
    assert len(requests) == len(PROBES)
    if kind == "anthropic":  # it refuses tool_use blocks without tools (the double too): one stub, never run
        assert all([t["name"] for t in r["body"]["tools"]] == ["no_tools"] for r in fake.requests)
    else:
        assert all("tools" not in r["body"] for r in fake.requests)  # asked with no tools


def test_issue37_judge_grades_are_reported_apart(tmp_path):
    def grading(messages: list[dict]) -> str:
        return "4" if messages[-1]["content"].startswith("Grade an answer") else _whole_view(messages)

    with FakeProvider(answer=grading) as fake:
        result = _eval(fake, tmp_path / "home", "--points", "1", "--strategy", "threadline", "--judge")
    assert result.returncode == 0, result.stderr
    parsed = json.loads(result.stdout)
    assert set(parsed) == {"points", "goals", "strategies", "judge"}
    judged = parsed["judge"]["threadline"]
    scored = parsed["strategies"]["threadline"]["probes"]
    for probe in PROBES:
        assert judged["probes"][probe] == {"grade": 4 if scored[probe]["n"] else None, "n": scored[probe]["n"]}
    assert judged["inputTokens"] > 0
    assert judged["errors"] == []


def test_issue37_at_picks_the_steps_and_refuses_one_the_replay_did_not_make(tmp_path):
    with FakeProvider() as fake:
        picked = _eval(fake, tmp_path / "home", "--at", "5", "--at", "2", "--strategy", "naive")
        beyond = _eval(fake, tmp_path / "home", "--at", "999")
    assert picked.returncode == 0, picked.stderr
    assert json.loads(picked.stdout)["points"] == [2, 5]
    assert beyond.returncode == 2
    assert beyond.stderr.startswith("threadline eval: --at 999: the replay made"), beyond.stderr


def test_issue37_the_table_shows_each_strategy_and_probe_and_the_tokens(tmp_path):
    with FakeProvider(answer=_whole_view) as fake:
        args = ["eval", str(KIMI), "--context-window", str(WINDOW), "--at", "3", "--strategy", "naive"]
        result = _run(args, server_env(tmp_path / "home", fake.url))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "points (steps): 3"
    assert lines[1].split() == ["strategy", "probe", "score", "n"]
    assert [line.split()[:2] for line in lines[2:6]] == [["naive", p] for p in PROBES]
    assert lines[6].startswith("tokens spent") and lines[7].split()[0] == "naive"
    assert lines[8].startswith("goal at step 3: message ")
    assert lines[9] == "legend:" and any(line.strip().startswith("score ") for line in lines[10:])
    assert any("whole words" in line for line in lines[10:])


def test_issue37_codex_style_summarizes_at_90_percent_and_keeps_a_quarter_window():
    window = 1_000
    system = [{"role": "system", "content": "prompt"}]
    asked: list[list[dict]] = []

    async def ask(messages: list[dict]) -> str:
        asked.append(messages)
        return "the summary"

    turns: list[dict] = []
    for i in range(40):
        turns.append({"role": "user", "content": f"step {i} " + "word " * 20})
        call = _call(f"c{i}", "run_command", {"command": f"make {i}"})
        turns += [{"role": "assistant", "content": "", "tool_calls": [call]}]
        turns += [{"role": "tool", "tool_call_id": f"c{i}", "content": "ok " * 10}]
    codex = CodexStyle(system, window, ask)
    view = asyncio.run(codex.advance(turns[:30]))
    assert asked, "no summary call"
    assert asked[0][-1] == {"role": "user", "content": COMPACTION_PROMPT}
    assert asked[0][-2]["role"] == "tool"  # never between a call and its results
    assert view[:2] == [*system, {"role": "user", "content": SUMMARY_PREFIX + "the summary"}]
    tail = view[2:]
    assert tail == turns[30 - len(tail) : 30]  # the latest messages, whole
    assert sum(estimate_message_tokens(m) for m in view) <= 0.9 * window
    before = len(asked)
    later = asyncio.run(codex.advance(turns))  # the same history, advanced: only the new messages are appended
    assert later[-1] == turns[-1] and len(asked) >= before


# --- the expected answers and the scores, on a transcript written for them --------------------------------------


def _call(call_id: str, name: str, args: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "user", "content": "<command-name>/clear</command-name>\n<command-args></command-args>"},
    {"role": "user", "content": "/mode"},
    {"role": "user", "content": "Fix the parse_config crash in src/config_loader.py"},
    {
        "role": "assistant",
        "content": "Reading it.",
        "tool_calls": [
            _call("a", "edit_file", {"path": "src/config_loader.py", "old": "x", "new": "y"}),
            _call("b", "write_file", {"path": "docs/missing.md", "content": "z"}),
            _call("c", "run_command", {"command": "pytest tests/test_config.py"}),
        ],
    },
    {"role": "tool", "tool_call_id": "a", "content": "ok"},
    {"role": "tool", "tool_call_id": "b", "content": "Error: permission denied: docs/missing.md"},
    {"role": "tool", "tool_call_id": "c", "content": "KeyError: 'timeout'\n[exit code 1]"},
    {"role": "assistant", "content": "Next I will guard the timeout lookup in parse_config."},
    {"role": "user", "content": "continue"},
    {"role": "user", "content": "/compact"},
]


def test_issue37_expected_answers_come_from_the_transcript():
    expected = expected_answers(TRANSCRIPT)
    assert expected.goal == "Fix the parse_config crash in src/config_loader.py"  # not /mode, /compact, continue
    assert expected.goal_seq == 3
    assert expected.files == ["src/config_loader.py"]  # the failed write changed nothing
    assert "write_file(docs/missing.md)" in expected.failures and "KeyError" in expected.failures
    assert expected.state == "Next I will guard the timeout lookup in parse_config."


def test_issue37_scores_are_path_recall_and_key_term_overlap():
    expected = expected_answers(TRANSCRIPT)
    assert score("files", expected, "I changed config_loader.py") == 1
    assert score("files", expected, "nothing") == 0
    assert {"src/config_loader.py", "parse_config"} <= set(key_terms(expected.goal))
    assert score("goal", expected, "fix the parse_config crash in src/config_loader.py") == 1
    assert 0 < score("goal", expected, "something about parse_config") < 1  # type: ignore[operator]
    assert score("failures", expected, "I don't know") == 0
    assert score("failures", expected_answers(TRANSCRIPT[:4]), "anything") is None  # nothing failed yet


def test_key_terms_are_matched_as_whole_words_not_substrings():
    """``check`` scored inside ``checkpoint`` gave a wrong answer 1.00."""
    state = Expected("", [], "", "make check failed in loader_check")
    assert score("state", state, "I was adding a checkpoint to the loader.") == 0
    assert score("state", state, "Run `make check`; loader_check FAILED.") == 1  # punctuation and case do not matter
    assert score("state", state, "CHECK: the generators, LOADER_CHECK (failed)") == 1
    written = expected_answers(TRANSCRIPT)
    assert score("files", written, "I edited config_loader.pyc") == 0
    assert score("files", written, "I edited (src/config_loader.py).") == 1


def test_the_goal_is_the_first_substantive_request_and_eval_says_which(tmp_path):
    """The recorded session's first user messages are a harness's /clear block and a bare /mode: the goal is the
    request after them, and the table and the JSON name its message."""
    messages = load_trajectory(KIMI)
    first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
    bare = [{"role": "user", "content": "/mode"}, {"role": "assistant", "content": "no such mode"}]
    path = tmp_path / "bare-command-first.json"
    path.write_text(json.dumps(messages[:first_user] + bare + messages[first_user:]), encoding="utf-8")
    with FakeProvider(answer=_whole_view) as fake:
        args = ["eval", str(path), "--context-window", str(WINDOW), "--at", "3", "--strategy", "naive", "--json"]
        result = _run(args, server_env(tmp_path / "home", fake.url))
    assert result.returncode == 0, result.stderr
    goal = json.loads(result.stdout)["goals"][0]
    assert goal["text"] == "make gen-* make check"
    replayed = asyncio.run(replay_file(path, WINDOW))
    assert replayed.transcript[goal["seq"] - 1]["content"] == "make gen-* make check"


def test_a_judge_without_a_grade_says_why_and_its_reply_is_kept(tmp_path):
    def grading(messages: list[dict]) -> str:
        if messages[-1]["content"].startswith("Grade an answer"):
            return "I would rather not grade this."
        return _whole_view(messages)

    out = tmp_path / "out"
    with FakeProvider(answer=grading) as fake:
        args = ["eval", str(KIMI), "--context-window", str(WINDOW), "--at", "3", "--strategy", "naive", "--judge"]
        table = _run([*args, "--out", str(out)], server_env(tmp_path / "home", fake.url))
        as_json = _run([*args, "--json"], server_env(tmp_path / "home2", fake.url))
    assert table.returncode == 0, table.stderr
    assert "judge gave no grade" in table.stdout
    assert "the reply is not a grade from 0 to 5: 'I would rather not grade this.'" in table.stdout
    assert "judge  the model's own 0-5 grade" in table.stdout
    errors = json.loads(as_json.stdout)["judge"]["naive"]["errors"]
    assert errors and all(e.startswith("step-3/naive ") for e in errors)
    kept = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((out / "step-3").glob("naive-*.json"))]
    judged = [k["judge"] for k in kept if k["score"] is not None]
    assert judged and all(j["reply"] == "I would rather not grade this." and j["grade"] is None for j in judged)
    assert all(j["error"].startswith("the reply is not a grade") for j in judged)
