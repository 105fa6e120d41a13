"""The context budget (B-BUDGET-1): old tool outputs are cleared when keeping them costs more than the cache break.

Pure, like the rest of the pipeline: a built view's messages, the outputs cleared before (sticky) and the budget in;
the view with every cleared output replaced, and the outputs newly cleared, out.

The rule is rent-or-buy. A tool output is stale once ``keep_recent_outputs`` newer outputs follow it (or the later
message that last quoted it or named its path). Keeping a stale output costs its cached-read price on every later
request (the rent); clearing costs one cache write of what follows the first cleared output in the request (the
purchase: the provider's prefix cache breaks there). A batch of stale outputs is cleared once the rent its outputs
have paid since they went stale exceeds the price of that break, and only when it frees at least ``clear_at_least``
tokens, so the cache breaks seldom; this is the simple rent-or-buy rule, which never pays more than twice what the
best clearing chosen in hindsight pays. With a budget in tokens (``[context] budget = N``) the batch is cleared
instead when the view is over N. Once cleared an output stays cleared: the view between batches is the previous
request plus what was appended (B-CACHE-1).

Never cleared: anything but a tool output (the task, every call with its arguments, the plan), a failure (B-SUM-10),
a background process's start or state (B-SUM-11), an output the model has not yet seen (after the last assistant
message) and the last ``keep_recent_outputs``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from protocol.wire_text import PLACEHOLDER_PREFIX

from .micro import content_text, is_failed_result
from .processes import process_event
from .tokens import estimate_message_tokens

__all__ = [
    "CLEAR_AT_LEAST",
    "KEEP_RECENT_OUTPUTS",
    "Budget",
    "BudgetOutcome",
    "BudgetReport",
    "CachePrices",
    "ClearedOutput",
    "apply_budget",
    "cleared_placeholder",
    "output_key",
]

Message = dict[str, Any]
KEEP_RECENT_OUTPUTS = 1  # measured (bench/RESULTS.md section 9): each output kept verbatim is rewritten at each break
CLEAR_AT_LEAST = 2_000  # tokens a batch must free (measured likewise)
# Measured on recorded sessions (bench/RESULTS.md section 9): past clearing, what a long session keeps is its
# messages; summarized as at a 128k window, a 1M window costs what a 128k one does instead of ~3x
PLANNING_WINDOW_TOKENS = 128_000
QUOTE_CHARS = 60  # a later assistant message that repeats this much of an output verbatim has quoted it
_QUOTE_PROBE = 40  # probes of this length, every _QUOTE_STRIDE characters, find any quote of QUOTE_CHARS or more
_QUOTE_STRIDE = 20
_RECALL_ARGS_CHARS = 300
_PATH_KEYS = ("path", "file", "file_path", "filename", "filePath")
_ARTIFACT = re.compile(r"\[artifact ([\w-]+)\]")
_PLACEHOLDER_CHARS = re.compile(re.escape(PLACEHOLDER_PREFIX) + r"(\d+) characters")


@dataclass(frozen=True)
class CachePrices:
    """A provider's prompt-cache prices as shares of an uncached input token: a cached read, a cache write.

    ``basis`` says where they come from (a provider kind, a named model's list price, a local server)."""

    read: float
    write: float
    basis: str


ANTHROPIC_PRICES = CachePrices(0.1, 1.25, "anthropic")
OPENAI_PRICES = CachePrices(0.1, 1.0, "openai")
# A local server bills time, not money: a cache break is prompt processing of what follows it (1.0 a token); a
# cached token costs no processing but slows every token generated over it (attention), taken as 0.05.
LOCAL_PRICES = CachePrices(0.05, 1.0, "local server (prompt-processing time)")


@dataclass(frozen=True)
class Budget:
    """``[context] budget`` (None: ``"auto"``, the rent-or-buy rule), ``keep_recent_outputs``, ``clear_at_least``
    and the cache prices ``auto`` decides with."""

    tokens: int | None = None
    keep_recent_outputs: int = KEEP_RECENT_OUTPUTS
    clear_at_least: int = CLEAR_AT_LEAST
    prices: CachePrices = OPENAI_PRICES
    # What remains after clearing (the conversation's own words) is summarized as at a window of at most this size
    planning_window_tokens: int | None = PLANNING_WINDOW_TOKENS


@dataclass(frozen=True)
class ClearedOutput:
    """One tool output a view shows cleared: its key, call, original tokens and why it was cleared."""

    key: str
    tool_call_id: str
    tool: str
    tokens: int
    reason: str


@dataclass(frozen=True)
class BudgetReport:
    """What ``getContextView`` says of the budget: ``tokens`` (config: the view size past which a batch is
    cleared; auto: how many tokens of re-reading stale outputs pay for the next clearing), its source and why."""

    tokens: int
    source: Literal["auto", "config"]
    reason: str


@dataclass(frozen=True)
class BudgetOutcome:
    messages: list[Message]
    saved_tokens: int  # what the cleared outputs no longer cost in this view
    cleared: tuple[ClearedOutput, ...]  # every output this view shows cleared, in view order
    new: dict[str, str] = field(default_factory=dict)  # key -> reason of the outputs cleared by this request
    report: BudgetReport | None = None


@dataclass
class _ToolOutput:
    index: int
    key: str
    tool_call_id: str
    tool: str
    arguments: str
    tokens: int
    text: str
    clearable: bool


def output_key(tool_call_id: str, tool: str, arguments: str) -> str:
    """A tool output's identity across requests, turns and restarts: its call id and what the call asked."""
    digest = _fnv1a(tool + "\0" + arguments)
    return f"{tool_call_id}:{digest:012x}"


def _fnv1a(text: str) -> int:
    """A 48-bit FNV-1a digest (stable across processes, unlike ``hash``; the pipeline imports no hashlib)."""
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h >> 16


def cleared_placeholder(chars: int, tool: str, arguments: str, text: str) -> str:
    """A cleared output's placeholder: how long it was and how to get it back (its artifact, or the call again)."""
    artifact = _ARTIFACT.search(text)
    if artifact:
        how = f'read_artifact {{"id": "{artifact.group(1)}"}}'
    else:
        args = arguments if len(arguments) <= _RECALL_ARGS_CHARS else arguments[:_RECALL_ARGS_CHARS] + "…"
        how = f"{tool} {args}"
    return f"{PLACEHOLDER_PREFIX}{chars} characters] cleared to save context; to see it again: {how}"


def _original_chars(text: str) -> int:
    """An output's length: its own, or the one a microcompaction placeholder says."""
    m = _PLACEHOLDER_CHARS.match(text)
    return int(m.group(1)) if m else len(text)


def _outputs(messages: Sequence[Mapping[str, Any]]) -> list[_ToolOutput]:
    calls: dict[str, tuple[str, str]] = {}
    out = []
    for i, msg in enumerate(messages):
        for call in msg.get("tool_calls") or ():
            fn = call.get("function") if isinstance(call.get("function"), Mapping) else {}
            args = fn.get("arguments")
            calls[str(call.get("id"))] = (str(fn.get("name", "")), args if isinstance(args, str) else json.dumps(args))
        if msg.get("role") != "tool":
            continue
        call_id = str(msg.get("tool_call_id"))
        tool, arguments = calls.get(call_id, ("", ""))
        text = content_text(msg.get("content"))
        clearable = (
            not text.startswith(PLACEHOLDER_PREFIX)
            and not is_failed_result(msg, tool)
            and process_event(text) is None
            and isinstance(msg.get("content"), str)
        )
        key = output_key(call_id, tool, arguments)
        out.append(_ToolOutput(i, key, call_id, tool, arguments, _output_tokens(msg, call_id), text, clearable))
    return out


_TOKENS: dict[tuple[str, str], int] = {}  # (call id, content) -> its estimate: a memo, so still pure
_TOKENS_KEPT = 8192


def _output_tokens(msg: Mapping[str, Any], call_id: str) -> int:
    """A tool output's estimate, remembered: the rule looks at every output of the view at every model call, and
    estimating them all again each time was a fifth of a busy server's loop (issue 50's 100 turns at once). The
    content is the view's own string, whose hash Python keeps, so a lookup costs no pass over the text."""
    content = msg.get("content")
    if not isinstance(content, str):
        return estimate_message_tokens(msg)
    key = (call_id, content)
    found = _TOKENS.get(key)
    if found is None:
        if len(_TOKENS) >= _TOKENS_KEPT:
            _TOKENS.clear()
        found = _TOKENS[key] = estimate_message_tokens(msg)
    return found


def _paths(arguments: str) -> list[str]:
    try:
        args = json.loads(arguments)
    except ValueError:
        return []
    if not isinstance(args, Mapping):
        return []
    return [v for k in _PATH_KEYS if isinstance(v := args.get(k), str) and len(v) >= 3]


def _mentions(msg: Mapping[str, Any], output: _ToolOutput) -> bool:
    """Whether a later user or assistant message names the output's path or quotes it (``QUOTE_CHARS``)."""
    said = content_text(msg.get("content"))
    calls = " ".join(json.dumps(c.get("function", {}).get("arguments", "")) for c in msg.get("tool_calls") or ())
    if any(path in said or path in calls for path in _paths(output.arguments)):
        return True
    if msg.get("role") != "assistant" or len(said) < QUOTE_CHARS:
        return False
    return any(said[s : s + _QUOTE_PROBE] in output.text for s in range(0, len(said) - _QUOTE_PROBE + 1, _QUOTE_STRIDE))


def _stale_from(messages: Sequence[Mapping[str, Any]], outputs: list[_ToolOutput], n: int, keep: int) -> int | None:
    """Where ``outputs[n]`` went stale: the ``keep``-th output after it or after the last message that mentioned
    it (a quote, its path), whichever is later; None while it is not stale."""
    output = outputs[n]
    last_mention = output.index
    for j in range(output.index + 1, len(messages)):
        if messages[j].get("role") in ("user", "assistant") and _mentions(messages[j], output):
            last_mention = j
    later = [o.index for o in outputs if o.index > last_mention]
    # A mention counts as a read: the outputs answering the mentioning message itself do not age it
    keep += last_mention != output.index
    if keep == 0:
        return last_mention
    return later[keep - 1] if len(later) >= keep else None


def _report(budget: Budget, break_price: float) -> BudgetReport:
    if budget.tokens is not None:
        return BudgetReport(
            budget.tokens,
            "config",
            f"[context] budget = {budget.tokens}: old tool outputs are cleared once the view is over it",
        )
    p = budget.prices
    allowance = math.ceil(break_price / p.read) if p.read > 0 else 0
    return BudgetReport(
        allowance,
        "auto",
        f"auto ({p.basis}: cached read {p.read:g}x, cache write {p.write:g}x): old tool outputs are cleared once "
        f"re-reading them since they went stale has cost more than one cache write of what follows them",
    )


def apply_budget(
    messages: Sequence[Mapping[str, Any]],
    budget: Budget,
    cleared: Mapping[str, str],
    view_tokens: int,
    decide: bool = True,
) -> BudgetOutcome:
    """``messages`` (a built view, ``view_tokens`` its estimate) with every output in ``cleared`` (key -> reason)
    replaced by its placeholder, and, when ``decide``, a new batch cleared if it pays (see the module doc)."""
    outputs = _outputs(messages)
    seen_until = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    keep = budget.keep_recent_outputs
    recent = {o.key for o in outputs[len(outputs) - keep :]} if keep else set()
    out = [dict(m) for m in messages]
    listed: dict[int, ClearedOutput] = {}
    saved = 0
    # A cleared output stays cleared (B-CACHE-1), also where a later compaction put its own placeholder there
    for o in outputs:
        if o.key in cleared and o.key not in recent and (o.clearable or o.text.startswith(PLACEHOLDER_PREFIX)):
            saved += _clear(out, o)
            listed[o.index] = ClearedOutput(o.key, o.tool_call_id, o.tool, o.tokens, cleared[o.key])
    stale: list[tuple[_ToolOutput, float]] = []  # (output, the rent it has paid since it went stale)
    for n, o in enumerate(outputs):
        if o.index in listed or not o.clearable or o.index > seen_until or o.key in recent:
            continue
        since = _stale_from(messages, outputs, n, keep)
        if since is not None:
            requests = 1 + sum(1 for m in messages[since + 1 :] if m.get("role") == "assistant")
            stale.append((o, budget.prices.read * o.tokens * requests))
    batch, rent, break_price = _batch(out, stale, seen_until, budget, view_tokens)
    new: dict[str, str] = {}
    if decide and batch:
        if budget.tokens is not None:
            why = f"the view ({view_tokens} tokens) was over the budget ({budget.tokens})"
        else:
            why = (
                f"re-reading it and the outputs cleared with it since they went stale had cost {rent:.0f} "
                f"token-equivalents, more than one cache write of the {break_price:.0f} after them "
                f"({budget.prices.basis})"
            )
        for o in batch:
            saved += _clear(out, o)
            new[o.key] = why
            listed[o.index] = ClearedOutput(o.key, o.tool_call_id, o.tool, o.tokens, why)
    report = _report(budget, break_price)
    return BudgetOutcome(out, saved, tuple(listed[i] for i in sorted(listed)), new, report)


def _clear(out: list[Message], o: _ToolOutput) -> int:
    """Put ``o``'s placeholder in ``out``; the tokens that saves."""
    out[o.index]["content"] = cleared_placeholder(_original_chars(o.text), o.tool, o.arguments, o.text)
    return o.tokens - estimate_message_tokens(out[o.index])


def _batch(
    out: list[Message], stale: list[tuple[_ToolOutput, float]], seen_until: int, budget: Budget, view_tokens: int
) -> tuple[list[_ToolOutput], float, float]:
    """The batch to clear now (empty: none pays), its rent and the price of its break.

    Each stale output is a place the cache could break: clearing it and every stale output after it breaks the
    cache there and costs one write of what follows up to what the model has seen (what came after is new anyway).
    The place chosen gains the most (rent paid minus that write) among those freeing ``clear_at_least``; with a
    budget in tokens, the earliest such place once the view is over the budget."""
    if not stale:
        return [], 0.0, 0.0
    sizes = [estimate_message_tokens(m) for m in out[: seen_until + 1]]
    for o, _ in stale:
        sizes[o.index] = estimate_message_tokens(
            dict(out[o.index], content=cleared_placeholder(_original_chars(o.text), o.tool, o.arguments, o.text))
        )
    suffix = [0] * (len(sizes) + 1)
    for i in range(len(sizes) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + sizes[i]
    best: tuple[float, int, float, float] | None = None  # (gain, place, rent, break)
    rent = freed = 0.0
    first_break = budget.prices.write * suffix[stale[0][0].index]
    for k in range(len(stale) - 1, -1, -1):
        o, paid = stale[k]
        rent += paid
        freed += o.tokens - sizes[o.index]
        price = budget.prices.write * suffix[o.index]
        if freed < budget.clear_at_least:
            continue
        if budget.tokens is not None:
            if view_tokens > budget.tokens:
                best = (0.0, k, rent, price)
        elif rent > price and (best is None or rent - price > best[0]):
            best = (rent - price, k, rent, price)
    if best is None:
        return [], rent, first_break
    _, k, rent, price = best
    return [o for o, _ in stale[k:]], rent, price


def _tokens(msg: Mapping[str, Any]) -> int:
    return estimate_message_tokens(msg)
