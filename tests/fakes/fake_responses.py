"""A strict double of OpenAI Responses (``POST /v1/responses``, streamed), rejecting what the real API rejects.

Script items: ``content``, ``reasoning`` (a summary, streamed, and an encrypted reasoning item), ``tool_calls``
([{id, name, arguments: dict or a raw string}]), ``error`` ({status, code?, message, in_stream?}), ``ptl`` (refuse as
over the window), ``chunks``/``chunk_delay`` (stream the text in that many pieces, waiting between them),
``incomplete`` (end with ``response.incomplete``, reason ``max_output_tokens``, as a cut answer does).

With ``store: false`` nothing is kept between requests, so a reasoning item must come back with its
``encrypted_content`` (only sent when ``include`` asks for it), and a function call the model made after
reasoning must come back after that reasoning item. Prompt cache: as OpenAI's automatic one, the longest run of
leading input items equal to a remembered request's is reported in ``input_tokens_details.cached_tokens``.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from tests.fakes.native_fake import NativeFake, Rejection, _raw_arguments, digest, echo, paced, tokens_of

ROLES = ("user", "assistant", "system", "developer")


def invalid(message: str, status: int = 400, code: str | None = None, param: str | None = None) -> Rejection:
    return Rejection(
        status, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}
    )


def seal(reasoning_id: str, text: str) -> str:
    return base64.b64encode(json.dumps({"id": reasoning_id, "text": text}).encode()).decode()


class FakeResponses(NativeFake):
    path = "/responses"

    def __init__(self, api_key: str | None = None, context_window: int | None = None) -> None:
        super().__init__(api_key, context_window)
        self._cache: list[list[bytes]] = []
        self._reasoned: dict[str, str] = {}  # call_id -> the reasoning item id it followed

    def forget(self) -> None:
        self._cache, self._reasoned = [], {}

    def check(self, headers: dict[str, str], body: Any) -> None:
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            raise invalid("Incorrect API key provided.", 401, "invalid_api_key")
        items = body.get("input")
        if not isinstance(items, list) or not items:
            raise invalid("Missing required parameter: 'input'.", param="input", code="missing_required_parameter")
        seen_calls: set[str] = set()
        reasoning_before: set[str] = set()
        for i, item in enumerate(items):
            kind = item.get("type", "message")
            if kind == "message" and item.get("role") not in ROLES:
                raise invalid(f"Invalid value: '{item.get('role')}'.", param=f"input[{i}].role")
            elif kind == "reasoning":
                if "encrypted_content" not in item:
                    raise invalid(
                        f"Item with id '{item.get('id')}' not found. Items are not persisted when `store` "
                        "is set to false. Try again with `store` set to true, or remove this item from "
                        "your input.",
                        404,
                    )
                reasoning_before.add(item.get("id", ""))
            elif kind == "function_call":
                if not isinstance(item.get("arguments"), str):
                    raise invalid(f"Invalid type for 'input[{i}].arguments': expected a string.")
                needed = self._reasoned.get(item.get("call_id", ""))
                if needed and needed not in reasoning_before:
                    raise invalid(
                        f"Item '{item.get('call_id')}' of type 'function_call' was provided without its "
                        f"required 'reasoning' item: '{needed}'."
                    )
                seen_calls.add(item.get("call_id", ""))
            elif kind == "function_call_output" and item.get("call_id") not in seen_calls:
                raise invalid(
                    f"No tool call found for function call output with call_id {item.get('call_id')}.",
                    param="input",
                )
        outputs = {item.get("call_id") for item in items if item.get("type") == "function_call_output"}
        for call in seen_calls - outputs:
            raise invalid(f"No tool output found for function call {call}.", param="input")
        if self.context_window is not None and tokens_of(items) > self.context_window:
            raise invalid(
                "Your input exceeds the context window of this model. Please adjust your input and try again.",
                code="context_length_exceeded",
                param="input",
            )

    def answer(self, body: dict[str, Any], item: dict[str, Any], record: dict[str, Any]) -> list[tuple[str, dict]]:
        if item.get("ptl"):  # as a request over the model's window is refused
            raise invalid(
                "Your input exceeds the context window of this model. Please adjust your input and try again.",
                code="context_length_exceeded",
                param="input",
            )
        error = item.get("error")
        if error and not error.get("in_stream"):
            raise Rejection(
                error["status"],
                {"error": {"message": error.get("message", ""), "type": "server_error", "code": error.get("code")}},
            )
        response = {
            "id": f"resp_{uuid.uuid4().hex[:20]}",
            "object": "response",
            "status": "in_progress",
            "model": body["model"],
            "output": [],
        }
        events: list[tuple[str, dict]] = [("response.created", {"type": "response.created", "response": response})]
        if error:
            failed = {
                **response,
                "status": "failed",
                "error": {"code": error.get("code", "server_error"), "message": error.get("message", "failed")},
            }
            return [*events, ("response.failed", {"type": "response.failed", "response": failed})]
        output: list[dict[str, Any]] = []
        reasoning_id = None
        if item.get("reasoning"):
            reasoning_id = f"rs_{uuid.uuid4().hex[:20]}"
            done = {
                "type": "reasoning",
                "id": reasoning_id,
                "summary": [{"type": "summary_text", "text": item["reasoning"]}],
            }
            if "reasoning.encrypted_content" in (body.get("include") or []):
                done["encrypted_content"] = seal(reasoning_id, item["reasoning"])
            events += [
                _added(len(output), {"type": "reasoning", "id": reasoning_id, "summary": []}),
                (
                    "response.reasoning_summary_text.delta",
                    {
                        "type": "response.reasoning_summary_text.delta",
                        "item_id": reasoning_id,
                        "output_index": len(output),
                        "summary_index": 0,
                        "delta": item["reasoning"],
                    },
                ),
                _done(len(output), done),
            ]
            output.append(done)
        content = item.get("content", "" if item.get("tool_calls") else echo(openai_messages(body)))
        if content:
            msg_id = f"msg_{uuid.uuid4().hex[:20]}"
            done = {
                "type": "message",
                "id": msg_id,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": content, "annotations": []}],
            }
            events += [
                _added(len(output), {**done, "status": "in_progress", "content": []}),
                *paced(
                    [
                        (
                            "response.output_text.delta",
                            {
                                "type": "response.output_text.delta",
                                "item_id": msg_id,
                                "output_index": len(output),
                                "content_index": 0,
                                "delta": part,
                            },
                        )
                        for part in _split(content, item.get("chunks", 3))
                    ],
                    item.get("chunk_delay"),
                ),
                _done(len(output), done),
            ]
            output.append(done)
        for call in item.get("tool_calls") or ():
            call_id = call.get("id") or f"call_{uuid.uuid4().hex[:20]}"
            if reasoning_id:
                self._reasoned[call_id] = reasoning_id
            raw = _raw_arguments(call.get("arguments", {}))
            fc = {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex[:20]}",
                "call_id": call_id,
                "name": call["name"],
                "arguments": raw,
                "status": "completed",
            }
            n = len(output)
            events += [
                _added(n, {**fc, "arguments": "", "status": "in_progress"}),
                *[
                    (
                        "response.function_call_arguments.delta",
                        {
                            "type": "response.function_call_arguments.delta",
                            "item_id": fc["id"],
                            "output_index": n,
                            "delta": part,
                        },
                    )
                    for part in _split(raw)
                ],
                (
                    "response.function_call_arguments.done",
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": fc["id"],
                        "output_index": n,
                        "arguments": raw,
                    },
                ),
                _done(n, fc),
            ]
            output.append(fc)
        usage = self._usage(body["input"])
        record["usage"] = usage
        if item.get("incomplete"):  # stopped at max_output_tokens: the last item and the response are incomplete
            if output:
                output[-1] = {**output[-1], "status": "incomplete"}
            reason = {"reason": "max_output_tokens"}
            cut = {**response, "status": "incomplete", "incomplete_details": reason, "output": output, "usage": usage}
            return [*events, ("response.incomplete", {"type": "response.incomplete", "response": cut})]
        completed = {**response, "status": "completed", "output": output, "usage": usage}
        return [*events, ("response.completed", {"type": "response.completed", "response": completed})]

    def _usage(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        encoded = [digest(i) for i in items]
        shared = 0
        for seen in self._cache:
            n = 0
            while n < min(len(seen), len(encoded)) and seen[n] == encoded[n]:
                n += 1
            shared = max(shared, n)
        self._cache.append(encoded)
        total = tokens_of(items)
        cached = min(total, tokens_of(items[:shared])) if shared else 0
        return {
            "input_tokens": total,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": 9,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": total + 9,
        }


def _added(index: int, item: dict[str, Any]) -> tuple[str, dict]:
    return "response.output_item.added", {"type": "response.output_item.added", "output_index": index, "item": item}


def _done(index: int, item: dict[str, Any]) -> tuple[str, dict]:
    return "response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": item}


def _split(text: str, parts: int = 3) -> list[str]:
    step = max(1, -(-len(text) // parts))
    return [text[i : i + step] for i in range(0, len(text), step)] or [""]


def openai_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request as Chat Completions messages (see fake_anthropic.openai_messages): ``instructions`` and each
    message item as a message, ``function_call`` items joined to the assistant message before them as tool_calls,
    each ``function_call_output`` a tool message; reasoning items go."""
    out: list[dict[str, Any]] = (
        [{"role": "system", "content": body["instructions"]}] if body.get("instructions") else []
    )
    for item in body.get("input") or []:
        kind = item.get("type", "message")
        if kind == "message":
            content = item.get("content")
            if isinstance(content, list) and all(p.get("type") in ("input_text", "output_text") for p in content):
                content = "".join(p.get("text", "") for p in content)
            out.append({"role": "system" if item["role"] == "developer" else item["role"], "content": content})
        elif kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            if out and out[-1]["role"] == "assistant":
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item["call_id"], "content": item.get("output", "")})
    return out
