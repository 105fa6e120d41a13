"""MCP tool results as the text the model reads."""

from __future__ import annotations

import pytest
from mcp import types as mt

from server.mcp.results import result_text
from server.tools.base import ToolFailure


def test_text_image_resources_and_structured_content():
    result = mt.CallToolResult(
        content=[
            mt.TextContent(text="hello"),
            mt.ImageContent(data="aGVsbG8=", mime_type="image/png"),
            mt.EmbeddedResource(resource=mt.TextResourceContents(uri="file:///a.txt", text="inside")),
            mt.EmbeddedResource(resource=mt.BlobResourceContents(uri="file:///b.bin", blob="AAAA")),
        ]
    )
    text = result_text(result)
    assert "hello" in text and "[image image/png, 5 bytes" in text
    assert "[resource file:///a.txt]\ninside" in text and "file:///b.bin" in text


def test_structured_content_alone_is_json():
    assert '"t": 21' in result_text(mt.CallToolResult(content=[], structured_content={"t": 21}))


def test_isError_is_a_tool_failure():
    with pytest.raises(ToolFailure, match="nope"):
        result_text(mt.CallToolResult(content=[mt.TextContent(text="nope")], is_error=True))
