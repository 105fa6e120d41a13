"""An ACP prompt (content blocks) -> the user message Threadline stores: its text and its images.

Text blocks are the text; images are images; a resource link becomes a line naming it (the model can read the
file with its tools); an embedded text resource is inlined in a ``<resource>`` element, an embedded image blob
becomes an image, any other blob a line saying what was left out (the model cannot read bytes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from protocol.turns import ContextItem, FileContext, SelectionContext
from server.errors import UnsupportedContent
from server.grounding.link import uri_to_path
from server.project.workspace import is_inside


def user_message(blocks: list[Any]) -> tuple[str, list[dict[str, str]]]:
    parts: list[str] = []
    images: list[dict[str, str]] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ImageContentBlock):
            images.append({"mimeType": block.mime_type, "data": block.data})
        elif isinstance(block, ResourceContentBlock):
            label = block.title or block.name
            parts.append(f"[resource: {label}]({block.uri})")
        elif isinstance(block, EmbeddedResourceContentBlock):
            parts.extend(_embedded(block.resource, images))
        elif isinstance(block, AudioContentBlock):
            raise UnsupportedContent("audio prompts are not supported (promptCapabilities.audio is false)")
    return "\n\n".join(p for p in parts if p), images


def _embedded(resource: Any, images: list[dict[str, str]]) -> list[str]:
    if isinstance(resource, TextResourceContents):
        return [f'<resource uri="{resource.uri}">\n{resource.text}\n</resource>']
    if isinstance(resource, BlobResourceContents):
        mime = resource.mime_type or "application/octet-stream"
        if mime.startswith("image/"):
            images.append({"mimeType": mime, "data": resource.blob})
            return []
        return [
            f"[resource {resource.uri} ({mime}, {len(resource.blob) * 3 // 4} bytes) was attached; "
            "its binary content is not shown]"
        ]
    return []


def prompt_context(blocks: list[Any], cwd: Path) -> tuple[list[Any], list[ContextItem]]:
    """ACP's resource links and embedded resources as ``submitTurn`` context, so they are attached,
    checked and stored as an editor's are: a ``file://`` link is a file to attach (refused with a note outside the
    session folder); an embedded text resource of a file inside it is a selection of the whole buffer. The rest
    stays for ``user_message`` (an embedded resource from elsewhere is the client's own text: inlined as before)."""
    rest: list[Any] = []
    context: list[ContextItem] = []
    for block in blocks:
        if isinstance(block, ResourceContentBlock) and block.uri.startswith("file://"):
            context.append(FileContext(uri=block.uri))
        elif (
            isinstance(block, EmbeddedResourceContentBlock)
            and isinstance(block.resource, TextResourceContents)
            and _inside(cwd, block.resource.uri)
        ):
            context.append(SelectionContext(uri=block.resource.uri, text=block.resource.text))
        else:
            rest.append(block)
    return rest, context


def _inside(cwd: Path, uri: str) -> bool:
    path = uri_to_path(uri)
    return path is not None and is_inside(cwd, path)
