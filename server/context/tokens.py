"""Conservative token estimate without a model tokenizer (R-TOK-1, R-TOK-2, B-TOK-3).

The article's rule (CJK = 1, other characters ceil(n/4), image 2,000, tool-call JSON ceil(len/4)) is the
floor: the estimate is never below it. On top of it, text is split by compiled regexes into classes that real
BPE tokenizers charge more for (B-TOK-3): CJK, high-entropy runs (base64, hex, ids), digit runs, punctuation,
line breaks and ordinary words. The class estimate is used when it is higher than the floor. Every pass is a
C-level regex scan, so the cost stays linear in the text length; the only Python loop is over long
high-entropy runs, which are rare outside base64/hex blobs.

``bench/estimator/run.py`` measures the constants below against cl100k_base and o200k_base.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "Calibration",
    "apply_calibration",
    "calibrate",
    "estimate_message_tokens",
    "estimate_messages_tokens",
    "estimate_text_tokens",
]

IMAGE_TOKENS = 2_000
# Role marker and separators every chat format adds around a message.
MESSAGE_OVERHEAD_TOKENS = 4

# CJK ideographs (incl. extension A and compatibility), kana, Hangul, CJK punctuation and full-width forms.
_CJK = re.compile(
    "[\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0002fa1f]"
)
# Candidate high-entropy run: long and without spaces; _is_high_entropy decides.
_LONG_RUN = re.compile(r"[A-Za-z0-9+/=_\-]{16,}")
_HEX_RUN = re.compile(r"[0-9a-fA-F]+")
_HAS_DIGIT = re.compile(r"\d")
_SEPARATOR = re.compile(r"[/_\-]")
_WORD = re.compile(r"[A-Za-z]+")
_DIGIT_RUN = re.compile(r"\d+")
_PUNCT = re.compile(r"[!-/:-@\[-`{-~]")
_NEWLINE = re.compile(r"\n")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")

# Class costs in tokens, fitted in bench/estimator (see RESULTS.md) with a ~10% margin over the larger of
# cl100k_base and o200k_base on every class, then rounded.
_CJK_COST = 1.25  # Chinese prose costs cl100k about 1.1-1.2 tokens per character (B-TOK-3).
_WORD_COST = 0.8  # A letter run is usually one token, often merged with its leading space ...
_LETTER_COST = 0.07  # ... and long or rare words split into more.
_DIGIT_RUN_COST = 1.2  # Numbers rarely merge with neighbours (timestamps, line numbers, versions) ...
_DIGIT_COST = 0.34  # ... and BPE splits them into groups of at most three digits.
_PUNCT_COST = 0.8  # JSON and code punctuation merges only in short pairs like `",` or `);`.
_NEWLINE_COST = 0.5  # A newline plus its indentation is about one token every other line.
_OTHER_COST = 1.0  # Non-ASCII, non-CJK characters (accents, arrows, emoji).
_HEX_CHARS_PER_TOKEN = 1.6
_BASE64_CHARS_PER_TOKEN = 1.25


def _entropy_cost(run: str) -> float | None:
    """Tokens for one long run if it is base64/hex-like, else None (B-TOK-3).

    Paths and snake/kebab identifiers have a separator every few characters and are left to the word
    classes; a run with digits and few separators is random-looking and BPE splits it into short pieces.
    """
    if not _HAS_DIGIT.search(run) or len(_SEPARATOR.findall(run)) * 10 > len(run):
        return None
    if _HEX_RUN.fullmatch(run):
        return len(run) / _HEX_CHARS_PER_TOKEN
    return len(run) / _BASE64_CHARS_PER_TOKEN


def _class_estimate(text: str) -> float:
    """Sum of per-class costs for text that has no CJK characters in it."""
    entropy = 0.0

    def take_run(match: re.Match[str]) -> str:
        nonlocal entropy
        cost = _entropy_cost(match.group())
        if cost is None:
            return match.group()
        entropy += cost
        return " "

    rest = _LONG_RUN.sub(take_run, text)
    words = _WORD.findall(rest)
    digit_runs = _DIGIT_RUN.findall(rest)
    letters = sum(map(len, words))
    digits = sum(map(len, digit_runs))
    return (
        entropy
        + len(words) * _WORD_COST
        + letters * _LETTER_COST
        + len(digit_runs) * _DIGIT_RUN_COST
        + digits * _DIGIT_COST
        + len(_PUNCT.findall(rest)) * _PUNCT_COST
        + len(_NEWLINE.findall(rest)) * _NEWLINE_COST
        + len(_NON_ASCII.findall(rest)) * _OTHER_COST
    )


def estimate_text_tokens(text: str) -> int:
    """Estimated tokens of one text (R-TOK-1 floor, B-TOK-3 classes); 0 for an empty text."""
    if not text:
        return 0
    rest, cjk = _CJK.subn("", text)
    floor = cjk + math.ceil(len(rest) / 4)
    estimate = math.ceil(cjk * _CJK_COST + _class_estimate(rest))
    return max(floor, estimate)


def _content_tokens(content: Any) -> int:
    """Tokens of a message content: string, None, or a list of text/image parts (R-TOK-1)."""
    if content is None:
        return 0
    if isinstance(content, str):
        return estimate_text_tokens(content)
    total = 0
    for part in content:
        if not isinstance(part, Mapping):
            total += estimate_text_tokens(str(part))
        elif part.get("type") == "image_url" or "image_url" in part:
            total += IMAGE_TOKENS
        elif isinstance(part.get("text"), str):
            total += estimate_text_tokens(part["text"])
        else:
            total += estimate_text_tokens(json.dumps(part, ensure_ascii=False, sort_keys=True))
    return total


def estimate_message_tokens(msg: Mapping[str, Any]) -> int:
    """Estimated tokens of one message as sent (R-TOK-1, R-TOK-2).

    Counts content, tool-call JSON (ceil(len/4) floor, counted separately), tool_call_id and name, plus a small
    per-message overhead. ``reasoning``, ``reasoning_content``, ``seq`` and ``status`` are never sent, so never
    counted.
    """
    total = MESSAGE_OVERHEAD_TOKENS + _content_tokens(msg.get("content"))
    tool_calls = msg.get("tool_calls")
    if tool_calls:
        # The article counts the JSON of the calls; the class estimate is used where it is higher.
        dumped = json.dumps(tool_calls, ensure_ascii=False)
        total += max(math.ceil(len(dumped) / 4), estimate_text_tokens(dumped))
    for key in ("tool_call_id", "name"):
        value = msg.get(key)
        if isinstance(value, str):
            total += estimate_text_tokens(value)
    return total


def estimate_messages_tokens(msgs: Iterable[Mapping[str, Any]]) -> int:
    """Estimated tokens of a whole request view (sum of its messages)."""
    return sum(estimate_message_tokens(m) for m in msgs)


# --- calibration from reported usage (B-TOK-3) ------------------------------------------------------------

CALIBRATION_MIN = 1.0  # Never scale below the estimate itself, so the R-TOK-1 floor holds.
CALIBRATION_MAX = 3.0  # One bad usage report must not inflate every later estimate without bound.
# Weight of the newest observation in the moving average: a provider counting more than the factor says is learned
# fast (planning short is what overruns a window), one counting less slowly (B-TOK-3 stays conservative).
CALIBRATION_ALPHA_UP = 0.7
CALIBRATION_ALPHA = 0.3


@dataclass(frozen=True)
class Calibration:
    """Per-model correction factor learned from the provider's ``usage.prompt_tokens`` (B-TOK-3)."""

    model: str = ""
    factor: float = 1.0
    samples: int = 0


def calibrate(cal: Calibration | None, estimated: int, reported_prompt_tokens: int) -> Calibration:
    """Fold one (estimate, reported) pair into the factor: an exponential moving average that rises faster than it
    falls, clamped to [1, 3].

    A pair with a non-positive side carries no information and returns the calibration unchanged.
    """
    base = cal if cal is not None else Calibration()
    if estimated <= 0 or reported_prompt_tokens <= 0:
        return base
    ratio = reported_prompt_tokens / estimated
    alpha = CALIBRATION_ALPHA_UP if ratio > base.factor else CALIBRATION_ALPHA
    factor = ratio if base.samples == 0 else base.factor + alpha * (ratio - base.factor)
    factor = min(CALIBRATION_MAX, max(CALIBRATION_MIN, factor))
    return Calibration(model=base.model, factor=factor, samples=base.samples + 1)


def calibrate_refused(cal: Calibration | None, estimated: int, reported_prompt_tokens: int) -> Calibration:
    """Fold in a request the provider refused as too long and counted at ``reported_prompt_tokens``: as
    ``calibrate``, and the factor is then at least that request's own ratio (within [1, 3]), so the next plan
    (the R-PTL-1 retry first) is not one the provider counts over its window again."""
    learned = calibrate(cal, estimated, reported_prompt_tokens)
    if estimated <= 0 or reported_prompt_tokens <= 0:
        return learned
    floor = min(CALIBRATION_MAX, reported_prompt_tokens / estimated)
    return Calibration(model=learned.model, factor=max(learned.factor, floor), samples=learned.samples)


def apply_calibration(tokens: int, cal: Calibration | None) -> int:
    """Scale an estimate by the learned factor, rounding up; never below the estimate (R-TOK-1 floor)."""
    if cal is None:
        return tokens
    return max(tokens, math.ceil(tokens * cal.factor))
