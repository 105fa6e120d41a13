"""What fills a request (the context inspector): a view's estimate split by what each part is.

Pure, like the rest of the pipeline: a built view in, integer token counts out. The parts of the view sum to its
estimate exactly, ``systemPrompt + projectContext + summary + messages + placeholders == estimatedTokens``
(``messages`` is the rest once the others are counted, so an estimate carried over from the store and the sum of
per-message estimates can never disagree), and with the tool definitions and what is left of the window,
``systemPrompt + projectContext + toolDefinitions + summary + messages + placeholders + free == window``
whenever the request fits the window (``free`` is never negative).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.wire_text import PLACEHOLDER_PREFIX

from .tokens import estimate_message_tokens
from .view import RequestView

__all__ = ["Breakdown", "breakdown"]


@dataclass(frozen=True)
class Breakdown:
    system_prompt: int
    project_context: int
    tool_definitions: int
    summary: int
    messages: int
    placeholders: int
    free: int


def breakdown(view: RequestView, tool_definitions: int, window: int) -> Breakdown:
    """``view`` split into its parts. The first leading system message is the system prompt, the other leading
    ones the project context (AGENTS.md, rules, validation policy, skills index, memory: R-FRZ-1), the summary
    message (summarized and fallback views) the summary; placeholders are the tool outputs microcompaction
    replaced (what they still cost); the rest are the conversation's messages."""
    system_prompt = project_context = summary = placeholders = 0
    leading = True
    for i, msg in enumerate(view.messages):
        role, content = msg.get("role"), msg.get("content")
        tokens = estimate_message_tokens(msg)
        if role == "system" and view.summary is not None and content == view.summary:
            summary += tokens
            leading = False
        elif role == "system" and leading:
            if i == 0:
                system_prompt += tokens
            else:
                project_context += tokens
        else:
            leading = False
            if role == "tool" and isinstance(content, str) and content.startswith(PLACEHOLDER_PREFIX):
                placeholders += tokens
    counted = system_prompt + project_context + summary + placeholders
    messages = max(0, view.estimated_tokens - counted)
    return Breakdown(
        system_prompt=system_prompt,
        project_context=project_context,
        tool_definitions=tool_definitions,
        summary=summary,
        messages=messages,
        placeholders=placeholders,
        free=max(0, window - view.estimated_tokens - tool_definitions),
    )
