"""Token estimate (R-TOK-1, R-TOK-2, B-TOK-3) and its calibration from reported usage."""

from __future__ import annotations

import base64
import json
import math
import random

from server.context import (
    IMAGE_TOKENS,
    Calibration,
    apply_calibration,
    calibrate,
    calibrate_refused,
    estimate_message_tokens,
    estimate_messages_tokens,
    estimate_text_tokens,
)
from server.context.tokens import MESSAGE_OVERHEAD_TOKENS

from .helpers import assistant, call, text_of_tokens


def _floor(text: str) -> int:
    """The article's rule, written out independently (R-TOK-1)."""
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return cjk + math.ceil((len(text) - cjk) / 4)


def test_R_TOK_1_floor_cjk_is_one_token_and_other_chars_quarter():
    assert estimate_text_tokens("") == 0
    assert estimate_text_tokens("abcd") >= 1
    assert estimate_text_tokens("你好世界") >= 4
    for text in ["hello world", "你好，world", "def f(x):\n    return x * 2\n", "上下文管理" * 50, "x" * 4001]:
        assert estimate_text_tokens(text) >= _floor(text)
    # Plain English prose is estimated at exactly the floor (the class estimate is lower there).
    assert estimate_text_tokens(text_of_tokens(100)) == 100


def test_R_TOK_1_image_counts_2000_tokens():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 50_000}}
    msg = {"role": "user", "content": [{"type": "text", "text": ""}, image, image]}
    assert estimate_message_tokens(msg) == MESSAGE_OVERHEAD_TOKENS + 2 * IMAGE_TOKENS


def test_R_TOK_1_tool_call_json_counted_separately():
    c = call("call_1", "edit_file", path="src/app.py", old="a" * 400, new="b" * 400)
    with_call = estimate_message_tokens(assistant("ok", c))
    without = estimate_message_tokens(assistant("ok"))
    assert with_call - without >= math.ceil(len(json.dumps([c])) / 4)


def test_R_TOK_2_reasoning_and_bookkeeping_keys_are_not_counted():
    plain = {"role": "assistant", "content": "Done."}
    noisy = {**plain, "reasoning": "x" * 10_000, "reasoning_content": "y" * 10_000, "seq": 12, "status": "interrupted"}
    assert estimate_message_tokens(noisy) == estimate_message_tokens(plain)
    assert estimate_messages_tokens([noisy, plain]) == 2 * estimate_message_tokens(plain)


def test_B_TOK_3_high_entropy_classes_are_charged_above_the_floor():
    rng = random.Random(7)
    b64 = base64.b64encode(rng.randbytes(3000)).decode()
    hexed = rng.randbytes(2000).hex()
    # Real BPE: base64 ~1.4 chars/token, hex ~1.7: the floor (4 chars/token) would be 60% under.
    assert estimate_text_tokens(b64) >= len(b64) / 1.5
    assert estimate_text_tokens(hexed) >= len(hexed) / 1.8
    chinese = "上下文管理不是超过上限后删几条消息，而是一条有固定优先级的流水线。" * 20
    assert estimate_text_tokens(chinese) >= 1.2 * _floor(chinese)
    lock = json.dumps(
        {f"node_modules/p{i}": {"version": f"1.{i}.0", "integrity": "sha512-" + b64[i : i + 88]} for i in range(50)},
        indent=2,
    )
    assert estimate_text_tokens(lock) >= 1.3 * _floor(lock)
    log = "\n".join(
        f"commit {rng.randbytes(20).hex()}\nDate:   Tue Dec {i % 28 + 1} 10:{i % 60:02d}:00 2025 +0000"
        for i in range(40)
    )
    assert estimate_text_tokens(log) >= 1.3 * _floor(log)


def test_B_TOK_3_paths_and_identifiers_are_not_treated_as_base64():
    path = "/Users/badlogic/workspaces/pi-mono/packages/coding-agent/src/core/agent-session.ts"
    assert estimate_text_tokens(path) < len(path) / 2


def test_B_TOK_3_calibration_learns_a_factor_and_never_goes_below_the_floor():
    cal = calibrate(None, 1000, 1300)
    assert cal.factor == 1.3 and cal.samples == 1
    cal = calibrate(cal, 1000, 1000)
    assert 1.0 < cal.factor < 1.3  # moving average, not the last value
    assert apply_calibration(1000, cal) >= 1000
    assert calibrate(None, 1000, 500).factor == 1.0  # an over-estimate never lowers the floor
    assert calibrate(None, 1000, 50_000).factor == 3.0  # one wild report is bounded
    assert calibrate(cal, 0, 100) == cal  # no information
    assert apply_calibration(1000, None) == 1000
    assert apply_calibration(1001, Calibration(factor=1.5)) == 1502


def test_B_TOK_3_the_factor_rises_fast_and_falls_slowly():
    """A provider that counts more than the factor says is learned within a call or two (planning short is what
    overruns a window); one that counts less lowers the factor slowly: the estimate stays on the safe side."""
    learned = calibrate(None, 1000, 1200)
    risen = calibrate(learned, 1000, 1600)
    fallen = calibrate(learned, 1000, 800)
    assert risen.factor - learned.factor > 2 * (learned.factor - fallen.factor) > 0
    assert calibrate(risen, 1000, 1600).factor > 1.55  # two calls: nearly the new ratio
    slow = learned
    for _ in range(2):
        slow = calibrate(slow, 1000, 1000)
    assert slow.factor > 1.05  # two calls: still well above the new ratio


def test_B_TOK_3_a_refused_request_sets_the_factor_to_at_least_its_own_ratio():
    learned = calibrate(None, 1000, 1000)
    for _ in range(5):
        learned = calibrate(learned, 1000, 1000)  # many calls where the estimate was right
    refused = calibrate_refused(learned, 1000, 2000)  # then one the provider counted at twice the estimate
    assert calibrate(learned, 1000, 2000).factor < 2.0 <= refused.factor  # a moving average would not reach it
    assert refused.samples == learned.samples + 1 and refused.model == learned.model
    assert calibrate_refused(None, 1000, 50_000).factor == 3.0  # bounded like any report
    assert calibrate_refused(learned, 1000, 900).factor == learned.factor  # an over-estimate teaches nothing new
    assert calibrate_refused(learned, 0, 100) == learned


def test_B_TOK_3_calibration_is_immutable():
    cal = Calibration(model="m")
    calibrate(cal, 100, 200)
    assert cal.factor == 1.0 and cal.model == "m"
