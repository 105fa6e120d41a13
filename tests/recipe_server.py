"""``python -m tests.recipe_server``: the real server (``threadline serve``) with one tool added the way
docs/ARCHITECTURE.md's "Add a tool" says, its first step: a ``Tool`` listed in ``server.tools.TOOLS``. Nothing of
the server is replaced; ``tests/test_recipes.py`` drives it over stdio with a scripted model."""

from __future__ import annotations

import sys
from typing import Any

import server.tools
from server.cli import main
from server.tools.base import Tool, ToolContext, require_str, schema


async def _count_words(ctx: ToolContext, args: dict[str, Any]) -> str:
    text = require_str(args, "text", allow_empty=True)
    return f"{len(text.split())} words"


COUNT_WORDS = Tool(
    "count_words",
    "Count the words of a text.",
    schema(["text"], text={"type": "string", "description": "the text"}),
    _count_words,
)

if __name__ == "__main__":
    server.tools.TOOLS[COUNT_WORDS.name] = COUNT_WORDS
    sys.exit(main(["serve", *sys.argv[1:]]))
