"""B-SUM-11: the summary lists the background processes still running, derived from the transcript alone."""

from __future__ import annotations

from server.context import ViewSettings, build_request_view, estimate_text_tokens, summarize
from server.context.processes import exited_line, running_line, started_line, stopped_line, unknown_line

from .helpers import assistant, call, sized, system, tool, user


def _start(call_id: str, process_id: str, command: str) -> list[dict]:
    return [
        assistant(None, call(call_id, "run_command", command=command, background=True)),
        tool(
            call_id, f"{started_line(process_id, 4242, command)}\nIt runs on; read what it prints with process_output."
        ),
    ]


def _read(call_id: str, process_id: str, header: str, name: str = "process_output") -> list[dict]:
    return [assistant(None, call(call_id, name, processId=process_id)), tool(call_id, f"{header}\nsome output")]


def _section(text: str) -> str:
    return text.split("Running processes:\n", 1)[1].split("\nGoals:", 1)[0]


def test_B_SUM_11_running_processes_are_listed_and_ended_ones_are_not():
    msgs = [
        user("start the dev server and the watcher"),
        *_start("c1", "bg-aaa111", "npm run dev -- --port 5173"),
        *_start("c2", "bg-bbb222", "cargo watch -x test"),
        *_start("c3", "bg-ccc333", "python3 -m http.server 8000"),
        *_start("c4", "bg-ddd444", "sleep 600"),
        *_read("c5", "bg-aaa111", running_line("bg-aaa111")),
        *_read("c6", "bg-bbb222", exited_line("bg-bbb222", 1)),
        *_read("c7", "bg-ccc333", stopped_line("bg-ccc333", -15), name="stop_process"),
        assistant(None, call("c8", "process_output", processId="bg-ddd444")),
        tool("c8", f"Tool failed: {unknown_line('bg-ddd444')}"),
    ]
    text = summarize(msgs)
    assert "\nRunning processes:\n- bg-aaa111: npm run dev -- --port 5173\nGoals:\n" in text


def test_B_SUM_11_no_process_no_section():
    msgs = [user("go"), assistant(None, call("c1", "run_command", command="ls")), tool("c1", "a\n[exit code 0]")]
    assert "Running processes:" not in summarize(msgs)


def test_B_SUM_11_a_result_of_another_tool_that_reads_the_same_is_not_a_process():
    msgs = [
        user("go"),
        assistant(None, call("c1", "read_file", path="notes.txt")),
        tool("c1", started_line("bg-fake", 1, "rm -rf /")),
    ]
    assert "Running processes:" not in summarize(msgs)


def test_B_SUM_11_many_processes_stay_within_the_section_budget_newest_kept():
    msgs = [user("go")]
    for i in range(60):
        msgs += _start(f"c{i}", f"bg-{i:06d}", f"server number {i} " + "--flag " * 20)
    text = summarize(msgs, budget_tokens=200)
    section = _section(text)
    assert estimate_text_tokens(f"Running processes:\n{section}\n") <= 200
    assert section.startswith("- (and ") and "earlier processes)" in section.split("\n", 1)[0]
    assert "bg-000059: server number 59" in section


def _long_session(n: int, start: int = 0) -> list[dict]:
    msgs = []
    for i in range(start, start + n):
        msgs += [sized(user(f"goal {i} "), 600), sized(assistant(f"state {i} "), 600)]
    return msgs


def test_B_SUM_11_a_compaction_keeps_a_process_started_long_ago_and_drops_one_stopped_in_the_tail():
    settings = ViewSettings(context_window_tokens=16_000, keep_recent_tokens=2_000)
    msgs = [
        system("rules"),
        user("start things"),
        *_start("c1", "bg-keep01", "python3 -m http.server 8000"),
        *_start("c2", "bg-gone02", "npm run watch"),
        *_long_session(30),
        *_read("c3", "bg-gone02", stopped_line("bg-gone02", -15), name="stop_process"),
        user("what next?"),
    ]
    view = build_request_view(msgs, settings)
    assert view.mode == "summarized" and view.summary is not None
    assert "\nRunning processes:\n- bg-keep01: python3 -m http.server 8000\n" in view.summary
    assert "bg-gone02" not in view.summary
    # the same again: byte-identical (R-SUM-3)
    assert build_request_view(msgs, settings).summary == view.summary


def test_B_SUM_11_a_microcompacted_start_still_counts():
    """A start whose output was microcompacted (the fold skips its text for failures) still lists the process."""
    from server.context.summary_state import SummaryState, summary_feed, summary_skip

    state = SummaryState()
    for msg in [user("go"), _start("c1", "bg-micro1", "npm run dev")[0]]:
        state = summary_feed(state, msg)
    state = summary_skip(state, _start("c1", "bg-micro1", "npm run dev")[1])
    assert state.processes == (("bg-micro1", "npm run dev"),)
    assert SummaryState.from_json(state.to_json()) == state
