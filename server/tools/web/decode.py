"""A fetched body's content coding, undone by us a bounded step at a time (SPEC B-WEB-2).

httpx would decode each network chunk whole, through every coding the answer names: a 1,827-byte answer saying
``Content-Encoding: gzip, gzip`` unpacks to gigabytes before any cap sees a byte. So ``web_fetch`` reads the raw
bytes and decodes them here: at most one coding, from ``CODINGS`` (no brotli or zstd: neither is a dependency, and
the request's ``Accept-Encoding`` offers only these), each call to zlib producing at most ``STEP`` bytes, so the
caller counts the decoded bytes as they come and stops at its cap with memory near the cap, never past it.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

STEP = 64 * 1024  # decoded bytes one zlib call may produce
ACCEPT_ENCODING = "gzip, deflate"
_GZIP = 16 + zlib.MAX_WBITS
_ZLIB = zlib.MAX_WBITS
_RAW = -zlib.MAX_WBITS
CODINGS = {"gzip": _GZIP, "x-gzip": _GZIP, "deflate": _ZLIB}


class CodingRefused(Exception):
    """The answer's ``Content-Encoding`` names more than one coding, or one this reader does not undo."""


class CodingFailed(Exception):
    """The body is not what its coding says (corrupt gzip or deflate data)."""


def codings(header: str) -> list[str]:
    """The codings a ``Content-Encoding`` header names, in order, ``identity`` left out."""
    named = (part.strip().lower() for part in header.split(","))
    return [name for name in named if name and name != "identity"]


class Decoder:
    """Undoes one content coding (or none) incrementally; ``feed`` and ``end`` yield pieces of at most ``STEP``."""

    def __init__(self, header: str, limit: int) -> None:
        named = codings(header)
        if len(named) > 1:
            raise CodingRefused(
                f"it names {len(named)} content codings ({', '.join(named)[:200]}) and web_fetch undoes one at most: "
                f"layered compression can unpack to far over the {limit} byte limit, so it was not read"
            )
        if named and named[0] not in CODINGS:
            raise CodingRefused(
                f"its content coding {named[0][:100]!r} is not one web_fetch undoes ({', '.join(CODINGS)})"
            )
        self.coding = named[0] if named else "identity"
        self._wbits = CODINGS.get(self.coding)
        self._z = zlib.decompressobj(self._wbits) if self._wbits is not None else None
        self._started = False  # a deflate body without its zlib header is read as raw deflate (as browsers do)

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._z is None:
            if data:
                yield data
            return
        while data:
            if self._z.eof:
                if self._wbits != _GZIP:
                    return  # what follows a deflate stream is not part of it
                self._z = zlib.decompressobj(_GZIP)  # a gzip body may be several members, one after another
            out = self._inflate(data)
            if out:
                yield out
            data = self._z.unused_data if self._z.eof else self._z.unconsumed_tail
            if not data and len(out) == STEP and not self._z.eof:
                yield from self._drain()

    def end(self) -> Iterator[bytes]:
        """What the decoder still holds once the body has all arrived."""
        if self._z is not None and not self._z.eof:
            yield from self._drain()

    def _drain(self) -> Iterator[bytes]:
        assert self._z is not None
        while out := self._inflate(b""):
            yield out

    def _inflate(self, data: bytes) -> bytes:
        assert self._z is not None
        try:
            out = self._z.decompress(data, STEP)
        except zlib.error as exc:
            if self._wbits == _ZLIB and not self._started:
                self._wbits, self._z = _RAW, zlib.decompressobj(_RAW)
                return self._inflate(data)
            raise CodingFailed(f"its {self.coding} data is corrupt ({exc})") from None
        self._started = True
        return out
