"""The prompt avante.nvim sends, unwrapped: the new text stored once, the client's context line kept apart.

avante wraps every prompt: it repeats up to five earlier messages, each as ``<previous_user_message>TEXT
</previous_user_message>``, and adds a ``<system_context>...</system_context>`` line. Stored as sent, the model
would read every earlier request twice (once in the transcript, once repeated) and ``session/load`` in another
client would show the tags as the user's words. Here an earlier message this session's transcript already holds is
dropped (one it does not hold, from before the session, stays as sent), and the context line is moved after the
user's words as its own block: the model still reads it, a client replaying the session does not show it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PREVIOUS = re.compile(r"<previous_user_message>(.*?)</previous_user_message>\s*", re.DOTALL)
CONTEXT = re.compile(r"<system_context>.*?</system_context>\s*", re.DOTALL)


def is_wrapped(text: str) -> bool:
    return "<previous_user_message>" in text or "<system_context>" in text


def unwrap(text: str, earlier: Iterable[str]) -> str:
    """``text`` without the repeats of ``earlier`` (the session's stored user messages), its context blocks after
    the user's words."""
    known = {_words(without_context(e)) for e in earlier}
    kept = PREVIOUS.sub(lambda m: "" if _words(m.group(1)) in known else m.group(0), text)
    contexts = [m.group(0).strip() for m in CONTEXT.finditer(kept)]
    words = CONTEXT.sub("", kept).strip()
    return "\n\n".join(p for p in (words, *contexts) if p)


def without_context(text: str) -> str:
    """A stored user message as the user wrote it: the client's context blocks left out (``session/load``)."""
    return CONTEXT.sub("", text).strip() if "<system_context>" in text else text


def _words(text: str) -> str:
    return " ".join(text.split())
