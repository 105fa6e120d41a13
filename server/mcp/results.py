"""An MCP ``CallToolResult`` as the text of a tool result (the model reads strings in tool messages).

Text parts are kept as they are; images, audio and binary resources are described (a Chat Completions tool message
carries no images); embedded text resources are kept with their URI; structured content is added as JSON when the
result has no text (servers that send both repeat the same data). ``isError`` results raise ``ToolFailure``, so
the model reads ``Tool failed: ...`` and the summary keeps it (R-MICRO-2).
"""

from __future__ import annotations

import base64
import binascii
import json

from mcp import types as mt

from server.tools.base import ToolFailure


def result_text(result: mt.CallToolResult) -> str:
    parts = [_part(block) for block in result.content]
    texts = [p for p in parts if p]
    if result.structured_content is not None and not any(isinstance(b, mt.TextContent) for b in result.content):
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    text = "\n".join(texts)
    if result.is_error:
        raise ToolFailure(text or "the MCP tool reported an error without a message")
    return text


def _part(block: object) -> str:
    if isinstance(block, mt.TextContent):
        return block.text
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        kind = "image" if isinstance(block, mt.ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {_size(block.data)} bytes, not shown to the model]"
    if isinstance(block, mt.EmbeddedResource):
        res = block.resource
        if isinstance(res, mt.TextResourceContents):
            return f"[resource {res.uri}]\n{res.text}"
        return f"[resource {res.uri}: {res.mime_type or 'binary'}, {_size(res.blob)} bytes, not shown to the model]"
    if isinstance(block, mt.ResourceLink):
        return f"[resource link {block.uri}" + (f" ({block.name})" if block.name else "") + "]"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown to the model]"


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
