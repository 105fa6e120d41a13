"""Issue 50's eval items, pure: the judge's reply is a grade only when it is or states one; a goal of one key term
is not scored by terms (only the judge grades it); a task given only inside tag blocks is read there."""

from __future__ import annotations

import pytest

from server.cli.eval_probes import MIN_GOAL_TERMS, expected_answers, judge_grade, key_terms, request_text, score
from tests.conftest import MINI_SWE, load_trajectory


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("4", 4),
        (" 0\n", 0),
        ("5.", 5),
        ("4/5", 4),
        ("**3**", 3),
        ("Grade: 4", 4),
        ("grade = 2", 2),
        ("The grade is 3.", 3),
        ("Grade: 4. The answer names the file but not the error.", 4),
        ("Grade: 1\n\nReasoning: grade 1 because ...", 1),
    ],
)
def test_issue_50_a_reply_that_is_or_states_a_grade_is_that_grade(reply: str, grade: int):
    assert judge_grade(reply) == grade


@pytest.mark.parametrize(
    "reply",
    [
        "bv1xsvv0r",  # a digit in noise was grade 1
        "I would rather not grade this.",
        "I give it 3",  # a digit in prose states no grade
        "Grade: 4 ... on second thought, Grade: 2",  # two grades are none
        "Grade: 4.5",
        "Grade: 7",
        "5 - everything is there",
        "",
    ],
)
def test_issue_50_any_other_reply_is_no_grade(reply: str):
    assert judge_grade(reply) is None


def test_issue_50_a_goal_of_one_key_term_is_left_to_the_judge():
    """ "make gen-* make check" has one key term: "check the weather in Paris" scored 1.00 against it."""
    one = expected_answers([{"role": "user", "content": "make gen-* make check"}])
    assert key_terms(one.goal) == ["check"]
    assert score("goal", one, "check the weather in Paris") is None
    several = expected_answers([{"role": "user", "content": "Fix the parse_config crash in src/config_loader.py"}])
    assert len(key_terms(several.goal)) >= MIN_GOAL_TERMS
    assert score("goal", several, "check the weather in Paris") == 0
    assert score("goal", several, "fix the parse_config crash in src/config_loader.py") == 1


def test_issue_50_the_bundled_mini_swe_agent_recording_has_its_goal_inside_the_tags():
    messages = load_trajectory(MINI_SWE)
    expected = expected_answers(messages[:4])
    assert expected.goal_seq == 2  # the task message, which is only <pr_description> and <instructions> blocks
    assert expected.goal.startswith("Consider the following PR description:")
    assert "astroid 2.9.1 breaks pylint with missing __init__.py" in expected.goal
    assert "<pr_description>" not in expected.goal and "<instructions>" not in expected.goal


def test_issue_50_a_harness_note_in_tags_is_still_no_request():
    assert request_text("<command-name>/clear</command-name>\n<command-args></command-args>") is None
    assert request_text("<task-notification>the build finished</task-notification>") is None
    assert request_text("<system-reminder>remember the plan</system-reminder>") is None
    assert request_text("<previous_user_message>Write b.txt with a greeting</previous_user_message>") == (
        "Write b.txt with a greeting"
    )
    assert request_text("continue") is None and request_text("/mode") is None
