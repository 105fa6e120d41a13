"""What is a slash command, and how a command file reads (``server.project.commands``), on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.errors import UnknownCommand
from server.project.commands import expand, invocation, load_commands, resolve


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/review a.py", ("review", "a.py")),
        ("/compact", ("compact", "")),
        ("/git:commit-all  now \n", ("git:commit-all", "now")),
        ("/review\nline two", ("review", "line two")),
        ("/usr/bin/env is missing", None),  # a path: the name runs into a slash
        ("/Review a.py", None),
        ("/-x", None),
        ("look at /review", None),
        ("/", None),
    ],
)
def test_issue_33_what_starts_a_command(text, expected):
    assert invocation(text) == expected


def test_issue_33_front_matter_first_line_and_precedence(tmp_path: Path):
    project, home = tmp_path / "p", tmp_path / "home"
    (project / ".threadline" / "commands").mkdir(parents=True)
    (home / "commands").mkdir(parents=True)
    (project / ".threadline" / "commands" / "a.md").write_text(
        '---\ndescription: "Quoted: with a colon"\nargument-hint: <x>\n---\n\nDo $ARGUMENTS and $ARGUMENTS.\n'
    )
    (project / ".threadline" / "commands" / "compact.md").write_text("a repository cannot redefine a built-in")
    (project / ".threadline" / "commands" / "unclosed.md").write_text("---\ndescription: never closed\nbody\n")
    (home / "commands" / "a.md").write_text("the user's a")
    (home / "commands" / "b.md").write_text("\n\n  First line of b  \nmore")
    commands = load_commands(project, home)
    a = commands["a"]
    assert (a.source, a.description, a.argument_hint) == ("project", "Quoted: with a colon", "<x>")
    assert expand(a, "it") == "Do it and it."
    assert commands["b"].description == "First line of b" and commands["b"].source == "user"
    assert commands["compact"].source == "builtin"
    assert commands["unclosed"].description == "---"  # no closing line: all of it is the body
    with pytest.raises(UnknownCommand) as err:
        resolve(commands, "zzz")
    assert err.value.details() == {"commands": sorted(commands)}
