"""Tool calls recorded by another agent, read as Threadline's own for ``threadline policy-check``.

A recording from Claude Code (the bundled demo is one) names its tools ``Bash``, ``Read``, ``Edit``, ...: asked
as they are, every call would be denied as an unknown tool, which says nothing about the rules being checked.
The calls whose tool has a Threadline counterpart are renamed, their arguments renamed with them; the rest are
foreign (``Agent``, ``AskUserQuestion``, ...), left as they are and named in a note.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Claude Code's tool -> (ours, its argument names -> ours); arguments not named here are dropped
COUNTERPARTS: dict[str, tuple[str, dict[str, str]]] = {
    "Bash": ("run_command", {"command": "command"}),
    "Read": ("read_file", {"file_path": "path", "offset": "offset", "limit": "limit"}),
    "Edit": ("edit_file", {"file_path": "path", "old_string": "old_string", "new_string": "new_string"}),
    "Write": ("write_file", {"file_path": "path", "content": "content"}),
    "Grep": ("search_files", {"pattern": "pattern", "path": "path", "glob": "glob"}),
    "Glob": ("list_files", {"pattern": "pattern", "path": "path"}),
}


@dataclass
class Translation:
    messages: list[dict[str, Any]]
    mapped: Counter[str] = field(default_factory=Counter)  # their tool name -> calls renamed

    def notes(self, unknown: Counter[str]) -> list[str]:
        """What was renamed, and the tools the server found no tool for (``unknown``: name -> calls)."""
        lines = []
        if self.mapped:
            pairs = ", ".join(f"{n} -> {COUNTERPARTS[n][0]} ({c})" for n, c in self.mapped.most_common())
            lines.append(f"read as Threadline's tools: {pairs}")
        if unknown:
            names = ", ".join(f"{n} ({c})" for n, c in sorted(unknown.items()))
            lines.append(f"foreign tools, which the live server would refuse as unknown: {names}")
        return lines


def translate(messages: list[dict[str, Any]]) -> Translation:
    """``messages`` with every mapped call renamed (a copy; the file's own list is left alone)."""
    out = copy.deepcopy(messages)
    done = Translation(out)
    for message in out:
        for call in message.get("tool_calls") or () if message.get("role") == "assistant" else ():
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                continue
            name = str(fn.get("name") or "")
            if name not in COUNTERPARTS:
                continue
            ours, names = COUNTERPARTS[name]
            fn["name"], fn["arguments"] = ours, _renamed(fn.get("arguments"), names)
            done.mapped[name] += 1
    return done


def _renamed(arguments: Any, names: dict[str, str]) -> str:
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return str(arguments)  # unparsable: checked (and refused) as it is
    if not isinstance(args, dict):
        return json.dumps(args)
    return json.dumps({names[k]: v for k, v in args.items() if k in names})
