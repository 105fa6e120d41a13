"""What the real Chat Completions API rejects, and how it words it. Stdlib only (the fake runs standalone)."""

from __future__ import annotations

import json
import math
from typing import Any

ROLES = ("system", "assistant", "user", "function", "tool", "developer")
# DeepSeek rejects reasoning_content sent back in input; OpenAI rejects any unknown message field.
REASONING_FIELDS = ("reasoning_content", "reasoning")
PTL_STYLES = ("openai", "deepseek", "qwen", "moonshot", "openrouter", "vllm", "vllm-v1", "llamacpp", "ollama")


class Rejection(Exception):
    """An error answer: HTTP status, JSON (or text) body and extra headers."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: Any = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = body if body is not None else error_body(message, type=type, param=param, code=code)
        self.headers = headers or {}


def error_body(
    message: str, *, type: str = "invalid_request_error", param: str | None = None, code: Any = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def masked_key(key: str) -> str:
    """OpenAI echoes a wrong key back masked like this."""
    return key[:3] + "*" * max(len(key) - 7, 4) + key[-4:] if len(key) > 8 else "*" * len(key)


def check_auth(authorization: str | None, api_key: str | None) -> None:
    if api_key is None:
        return
    if not authorization or not authorization.startswith("Bearer "):
        raise Rejection(
            401,
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as "
            "the password field (with blank username) if you're accessing the API from your "
            "browser and are prompted for a username and password. You can obtain an API key "
            "from https://platform.openai.com/account/api-keys.",
        )
    given = authorization[len("Bearer ") :]
    if given != api_key:
        raise Rejection(
            401,
            f"Incorrect API key provided: {masked_key(given)}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            code="invalid_api_key",
        )


def parse_body(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Rejection(
            400,
            "We could not parse the JSON body of your request. (HINT: This likely means you "
            "aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but "
            "what was sent was not valid JSON. If you have trouble figuring out how to fix this, "
            "please contact us through our help center at help.openai.com.)",
        ) from None


def check_request(body: Any, *, models: list[str] | None) -> None:
    """Everything the API checks before it looks at the prompt, in the order it checks it."""
    if not isinstance(body, dict):
        raise Rejection(
            400, f"Invalid type for body: expected an object, but got {_type_name(body)} instead.", code="invalid_type"
        )
    model = body.get("model")
    if not model:
        raise Rejection(400, "you must provide a model parameter")
    if not isinstance(model, str):
        raise _invalid_type("model", "a string", model)
    if models is not None and model not in models:
        raise Rejection(
            404, f"The model `{model}` does not exist or you do not have access to it.", code="model_not_found"
        )
    if "stream_options" in body and not body.get("stream"):
        raise Rejection(
            400, "The 'stream_options' parameter is only allowed when 'stream' is enabled.", param="stream_options"
        )
    for field in ("max_tokens", "max_completion_tokens"):
        _check_output_limit(body, field)
    _check_tools(body)
    check_messages(body.get("messages"))


def _check_output_limit(body: dict[str, Any], field: str) -> None:
    if field not in body or body[field] is None:
        return
    value = body[field]
    if not isinstance(value, int) or isinstance(value, bool):
        raise _invalid_type(field, "an integer", value)
    if value < 1:
        raise Rejection(
            400,
            f"Invalid '{field}': integer below minimum value. Expected a value >= 1, but got {value} instead.",
            param=field,
            code="integer_below_min_value",
        )


def check_messages(messages: Any) -> None:
    if messages is None:
        raise _missing("messages")
    if not isinstance(messages, list):
        raise Rejection(
            400,
            f"Invalid type for 'messages': expected an array of objects, but got {_type_name(messages)} instead.",
            param="messages",
            code="invalid_type",
        )
    if not messages:
        raise _empty_array("messages")
    for i, message in enumerate(messages):
        _check_message_shape(i, message)
    _check_tool_pairing(messages)


def _check_message_shape(i: int, message: Any) -> None:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise _invalid_type(where, "an object", message)
    for field in REASONING_FIELDS:
        if field in message:
            raise Rejection(
                400,
                f"Additional properties are not allowed ('{field}' was unexpected) - 'messages.{i}'",
                param=f"messages.[{i}].{field}",
            )
    role = message.get("role")
    if role is None:
        raise _missing(f"{where}.role")
    if role not in ROLES:
        supported = ", ".join(f"'{r}'" for r in ROLES[:-1]) + f", and '{ROLES[-1]}'"
        raise Rejection(
            400,
            f"Invalid value: '{role}'. Supported values are: {supported}.",
            param=_param(f"{where}.role"),
            code="invalid_value",
        )
    content = message.get("content")
    if role == "assistant":
        if content is None and not message.get("tool_calls") and not message.get("function_call"):
            raise Rejection(
                400, "Invalid value for 'content': expected a string, got null.", param=f"messages.[{i}].content"
            )
        if "tool_calls" in message:
            _check_tool_calls(where, message["tool_calls"])
    elif content is None:
        raise _missing(f"{where}.content")
    if content is not None and not isinstance(content, (str, list)):
        raise _invalid_type(f"{where}.content", "one of a string or array of objects", content)
    if isinstance(content, list):
        for j, part in enumerate(content):
            if not isinstance(part, dict):
                raise _invalid_type(f"{where}.content[{j}]", "an object", part)
            if part.get("type") == "text" and not isinstance(part.get("text"), str):
                raise _invalid_type(f"{where}.content[{j}].text", "a string", part.get("text"))
    if role == "tool":
        if message.get("tool_call_id") is None:
            raise _missing(f"{where}.tool_call_id")
        if not isinstance(message["tool_call_id"], str):
            raise _invalid_type(f"{where}.tool_call_id", "a string", message["tool_call_id"])


def _check_tool_calls(where: str, tool_calls: Any) -> None:
    if not isinstance(tool_calls, list):
        raise _invalid_type(f"{where}.tool_calls", "an array", tool_calls)
    if not tool_calls:
        raise _empty_array(f"{where}.tool_calls")
    for k, call in enumerate(tool_calls):
        at = f"{where}.tool_calls[{k}]"
        if not isinstance(call, dict):
            raise _invalid_type(at, "an object", call)
        for key in ("id", "type", "function"):
            if key not in call:
                raise _missing(f"{at}.{key}")
        if call["type"] != "function":
            raise Rejection(
                400,
                f"Invalid value: '{call['type']}'. Supported values are: 'function'.",
                param=_param(f"{at}.type"),
                code="invalid_value",
            )
        function = call["function"]
        if not isinstance(function, dict):
            raise _invalid_type(f"{at}.function", "an object", function)
        for key in ("name", "arguments"):
            if key not in function:
                raise _missing(f"{at}.function.{key}")
            if not isinstance(function[key], str):
                raise _invalid_type(f"{at}.function.{key}", "a string", function[key])


def _check_tool_pairing(messages: list[dict]) -> None:
    """Tool results must directly follow the assistant message that called them, answering every id."""
    open_at: int | None = None  # index of the assistant message whose results we are reading
    open_ids: list[str] = []
    answered: set[str] = set()
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            if open_at is None:
                raise Rejection(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param=f"messages.[{i}].role",
                )
            call_id = message["tool_call_id"]
            if call_id not in open_ids:
                raise Rejection(
                    400,
                    f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' of previous message.",
                    param=f"messages.[{i}].tool_call_id",
                )
            answered.add(call_id)
            continue
        _check_answered(open_at, open_ids, answered)
        open_at = None
        if message["role"] == "assistant" and message.get("tool_calls"):
            open_at, open_ids, answered = i, [c["id"] for c in message["tool_calls"]], set()
    _check_answered(open_at, open_ids, answered)


def _check_answered(open_at: int | None, open_ids: list[str], answered: set[str]) -> None:
    missing = [call_id for call_id in open_ids if call_id not in answered]
    if open_at is not None and missing:
        raise Rejection(
            400,
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(missing)}",
            param=f"messages.[{open_at}].role",
        )


def _check_tools(body: dict[str, Any]) -> None:
    if "tools" not in body:
        if "tool_choice" in body:
            raise Rejection(
                400,
                "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
                param="tool_choice",
            )
        return
    tools = body["tools"]
    if not isinstance(tools, list):
        raise _invalid_type("tools", "an array", tools)
    if not tools:
        raise _empty_array("tools")
    for k, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _invalid_type(f"tools[{k}]", "an object", tool)
        if "function" not in tool:
            raise _missing(f"tools[{k}].function")
        if not isinstance(tool["function"], dict) or not isinstance(tool["function"].get("name"), str):
            raise _missing(f"tools[{k}].function.name")


def estimate_prompt_tokens(messages: Any) -> int:
    return math.ceil(len(json.dumps(messages, ensure_ascii=False)) / 4)


def context_too_long(style: str, window: int, tokens: int) -> Rejection:
    """The 400 each provider really answers when the prompt does not fit (R-PTL-1 wordings)."""
    if style == "openai":
        return Rejection(
            400,
            f"This model's maximum context length is {window} tokens. However, your messages "
            f"resulted in {tokens} tokens. Please reduce the length of the messages.",
            param="messages",
            code="context_length_exceeded",
        )
    if style == "deepseek":
        return Rejection(
            400,
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{tokens} tokens ({tokens} in the messages, 0 in the completion). Please reduce "
            f"the length of the messages or completion.",
            code="invalid_request_error",
        )
    if style == "qwen":
        message = f"<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, {window}]"
        return Rejection(
            400,
            message,
            body={
                "error": {
                    "code": "invalid_parameter_error",
                    "param": None,
                    "message": message,
                    "type": "invalid_request_error",
                },
                "id": "chatcmpl-fake",
                "request_id": "fake-request-id",
            },
        )
    if style == "moonshot":
        message = f"Invalid request: Your request exceeded model token limit: {window}"
        return Rejection(400, message, body={"error": {"message": message, "type": "invalid_request_error"}})
    if style == "openrouter":
        message = (
            f"This endpoint's maximum context length is {window} tokens. However, you requested about "
            f"{tokens} tokens ({tokens} of text input). Please reduce the length of either one, or use "
            f'the "middle-out" transform to compress your prompt automatically.'
        )
        return Rejection(
            400, message, body={"error": {"message": message, "code": 400, "metadata": {"provider_name": None}}}
        )
    if style == "vllm":
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested {tokens} "
            f"tokens ({tokens} in the messages, 0 in the completion). Please reduce the length of the "
            f"messages or completion."
        )
        return Rejection(
            400,
            message,
            body={"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": 400},
        )
    if style == "vllm-v1":  # vLLM since 0.10 (V1 engine), the error nested as OpenAI nests it
        message = (
            f"This model's maximum context length is {window} tokens. However, your request has {tokens} input "
            f"tokens. Please reduce the length of the input messages. None"
        )
        return Rejection(
            400, message, body={"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}
        )
    if style == "llamacpp":  # llama-server's format_error_response(ERROR_TYPE_EXCEED_CONTEXT_SIZE)
        message = f"request ({tokens} tokens) exceeds the available context size ({window} tokens), try increasing it"
        return Rejection(
            400,
            message,
            body={
                "error": {
                    "code": 400,
                    "message": message,
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": tokens,
                    "n_ctx": window,
                }
            },
        )
    if style == "ollama":
        message = f"prompt too long; exceeded max context length by {tokens - window} tokens"
        return Rejection(
            400,
            message,
            body={"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}},
        )
    raise ValueError(f"unknown ptl_style {style!r}; expected one of {', '.join(PTL_STYLES)}")


def stream_options_unsupported() -> Rejection:
    """What older Ollama / llama.cpp servers answered to `stream_options`."""
    return Rejection(400, 'json: unknown field "stream_options"')


def scripted_error(status: int, model: str) -> Rejection:
    """A realistic default body for a scripted error status."""
    if status == 401:
        return Rejection(
            401,
            "Incorrect API key provided: sk-****wxyz. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            code="invalid_api_key",
        )
    if status == 403:
        return Rejection(403, f"Project `proj_fake` does not have access to model `{model}`", code="model_not_found")
    if status == 404:
        return Rejection(
            404, f"The model `{model}` does not exist or you do not have access to it.", code="model_not_found"
        )
    if status == 429:
        return Rejection(
            429,
            f"Rate limit reached for {model} in organization org-fake on requests per min "
            f"(RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.",
            type="requests",
            code="rate_limit_exceeded",
        )
    if status == 502:  # what a gateway in front of the model really sends
        return Rejection(
            502,
            "Bad Gateway",
            body="<html><head><title>502 Bad Gateway</title></head><body>"
            "<center><h1>502 Bad Gateway</h1></center></body></html>",
        )
    if status == 503:
        return Rejection(503, "The engine is currently overloaded, please try again later.", type="server_error")
    if status >= 500:
        return Rejection(
            status, "The server had an error while processing your request. Sorry about that!", type="server_error"
        )
    return Rejection(status, "Bad request")


def _missing(param: str) -> Rejection:
    return Rejection(
        400, f"Missing required parameter: '{param}'.", param=_param(param), code="missing_required_parameter"
    )


def _empty_array(param: str) -> Rejection:
    return Rejection(
        400,
        f"Invalid '{param}': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        param=_param(param),
        code="empty_array",
    )


def _invalid_type(param: str, expected: str, value: Any) -> Rejection:
    return Rejection(
        400,
        f"Invalid type for '{param}': expected {expected}, but got {_type_name(value)} instead.",
        param=_param(param),
        code="invalid_type",
    )


def _param(path: str) -> str:
    return path.replace("messages[", "messages.[")  # the API's own (odd) param spelling


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {str: "a string", int: "an integer", float: "a decimal", list: "an array", dict: "an object"}.get(
        type(value), "an unknown type"
    )
