"""The capability table gives known models' windows (R-PIPE-3) and parse_retry_after reads both header forms."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from server.providers import DEFAULT_CONTEXT_WINDOW, context_window_for
from server.providers.errors import parse_retry_after, redact


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4", 8_192),
        ("gpt-4-turbo", 128_000),
        ("gpt-5-mini", 400_000),
        ("o3-mini", 200_000),
        ("o1-mini", 128_000),
        ("deepseek-chat", 128_000),
        ("deepseek-reasoner", 128_000),
        ("qwen-plus", 131_072),
        ("qwen-max-latest", 32_768),
        ("qwen3-coder-plus", 1_000_000),
        ("qwen3-235b-a22b", 131_072),
        ("qwen2.5-coder:7b", 32_768),
        ("moonshot-v1-8k", 8_192),
        ("moonshot-v1-128k", 131_072),
        ("kimi-k2-0711-preview", 131_072),
        ("kimi-k2-0905-preview", 262_144),
        ("llama3.1:8b", 131_072),
        ("llama3:8b", 8_192),
        ("meta-llama/Llama-3.3-70B-Instruct", 131_072),
        ("openai/gpt-4o", 128_000),
        ("DeepSeek-Chat", 128_000),
    ],
)
def test_R_PIPE_3_known_models_match_by_longest_prefix(model, window):
    assert context_window_for(model) == window


def test_R_PIPE_3_unknown_models_have_no_window_and_callers_use_the_default():
    assert context_window_for("my-finetune") is None
    assert context_window_for("") is None
    assert 8_000 <= DEFAULT_CONTEXT_WINDOW <= 64_000


def test_retry_after_reads_seconds_http_dates_and_milliseconds():
    now = 1_700_000_000.0
    assert parse_retry_after({"retry-after": "3"}, now) == 3
    assert parse_retry_after({"retry-after": "1.5"}, now) == 1.5
    assert parse_retry_after({"retry-after": formatdate(now + 7, usegmt=True)}, now) == pytest.approx(7)
    assert parse_retry_after({"retry-after": formatdate(now - 7, usegmt=True)}, now) == 0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}, now) == 0.25
    assert parse_retry_after({"retry-after": "soon"}, now) is None
    assert parse_retry_after({}, now) is None


def test_redact_removes_the_key_and_masked_echoes_of_it():
    text = "Incorrect API key provided: sk-pro****************wxyz. Key sk-live-123456 and raw-secret-key"
    cleaned = redact(text, "raw-secret-key")
    assert "wxyz" not in cleaned and "123456" not in cleaned and "raw-secret-key" not in cleaned
