"""``[approvals]`` in config.toml: commands the user allows without being asked, in every session.

```toml
[approvals]
commands = ["git status", "make lint"]      # exactly these commands
command_prefixes = ["npm test", "pytest"]    # these, or these followed by arguments ("npm test -- --ci")
```

A rule matches the way a remembered "allow always" does (``server.agent.remembered``, through ``simple_command``): only a simple command,
never a compound one (``;``, ``&&``, ``|``, ``$(...)``, backticks, redirections, a second line), so ``npm test &&
curl ... | sh`` is asked about (or, in an unattended run, refused) whatever the rules say. A prefix matches whole
words: ``npm test`` covers ``npm test`` and ``npm test -- --watch``, not ``npm testing`` nor ``npm  test;x``.
A rule that is itself compound is a configuration error, so no rule can look broader than it is.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from protocol.tool_facts import facts_of

_COMPOUND = re.compile(r"[;&|<>`\n]|\$\(")


def simple_command(command: str) -> str | None:
    """``command`` stripped when it is one simple command; None when it is empty or compound (``;``, ``&&``, ``|``,
    ``$(...)``, backticks, redirections, a second line), which nothing broader than one call may allow (a
    remembered "allow always" nor a rule)."""
    command = command.strip()
    if not command or _COMPOUND.search(command):
        return None
    return command


class RuleError(ValueError):
    """A rule that can never match as written (compound, empty, unbalanced quotes)."""


@dataclass(frozen=True)
class ApprovalRules:
    commands: tuple[str, ...] = ()
    command_prefixes: tuple[tuple[str, ...], ...] = ()  # each prefix as its shell words

    @classmethod
    def parse(cls, commands: list[str], prefixes: list[str]) -> ApprovalRules:
        """The rules of ``[approvals]``; ``RuleError`` naming the first bad one."""
        for where, rule in [*(("commands", c) for c in commands), *(("command_prefixes", p) for p in prefixes)]:
            if simple_command(rule) != rule.strip():
                raise RuleError(f"approvals.{where}: {rule!r} is not one simple command (no ; & | < > ` $( or newline)")
            try:
                shlex.split(rule)
            except ValueError as exc:
                raise RuleError(f"approvals.{where}: {rule!r}: {exc}") from None
        return cls(tuple(c.strip() for c in commands), tuple(tuple(shlex.split(p)) for p in prefixes))

    def allows(self, tool: str, args: dict[str, Any]) -> str | None:
        """The rule that allows this call, in words, or None."""
        if facts_of(tool).grant != "command":  # rules name simple commands
            return None
        command = simple_command(str(args.get("command", "")))
        if command is None:
            return None
        if command in self.commands:
            return f"exactly {command!r}"
        try:
            words = tuple(shlex.split(command))
        except ValueError:  # unbalanced quotes: not a command any prefix can be said to cover
            return None
        for prefix in self.command_prefixes:
            if words[: len(prefix)] == prefix:
                return f"{shlex.join(prefix)!r} with any arguments"
        return None

    def describe(self) -> str:
        """What the rules allow, for a model told why its call was refused; '' when there are none."""
        allowed = [f"`{c}`" for c in self.commands] + [f"`{shlex.join(p)} ...`" for p in self.command_prefixes]
        return ", ".join(allowed)

    def __bool__(self) -> bool:
        return bool(self.commands or self.command_prefixes)
