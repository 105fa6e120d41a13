"""The images a user message may carry: checked by the turn service, so every front end refuses the same ones."""

from __future__ import annotations

import binascii

from protocol.messages import Image
from server.errors import InvalidParams

MAX_IMAGE_BYTES = 20 * 1024 * 1024  # what the providers accept per image
MAX_IMAGES = 20
_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}


def check_images(images: list[Image]) -> None:
    """Refuse, before anything is stored, an image no provider would take: it would be re-sent on every later
    request and fail each one. Type, strict base64, size, and that the bytes are that type."""
    if len(images) > MAX_IMAGES:
        raise InvalidParams(f"images: at most {MAX_IMAGES} images per message, got {len(images)}", code="InvalidImage")
    for i, image in enumerate(images):
        if image.mime_type not in _MAGIC:
            raise InvalidParams(
                f"images[{i}].mimeType must be one of {', '.join(_MAGIC)}, got {image.mime_type[:60]!r}",
                code="InvalidImage",
            )
        if len(image.data) > MAX_IMAGE_BYTES * 4 // 3 + 4:
            raise InvalidParams(f"images[{i}].data is over {MAX_IMAGE_BYTES} bytes", code="InvalidImage")
        try:
            raw = binascii.a2b_base64(image.data, strict_mode=True)
        except (binascii.Error, ValueError):
            raise InvalidParams(f"images[{i}].data is not valid base64", code="InvalidImage") from None
        if not raw.startswith(_MAGIC[image.mime_type]) or (image.mime_type == "image/webp" and raw[8:12] != b"WEBP"):
            raise InvalidParams(f"images[{i}].data is not a {image.mime_type} image", code="InvalidImage")
