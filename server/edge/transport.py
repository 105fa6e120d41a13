"""Message framing: ``Content-Length`` headers over a byte stream, with limits.

pygls' own reader buffers whatever length a header claims and drops unparseable bodies silently. Here every
message is bounded (``max_bytes``), a body that is not JSON gets a ``-32700`` answer, a message that is not a
JSON-RPC object gets ``-32600`` (so does each line of newline-delimited JSON sent without headers, answered with
the id it holds), and the stream resynchronises on the next header, so a hostile or broken
client can neither crash the server nor make it buffer without limit.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

import msgspec

from server.edge.errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR

log = logging.getLogger(__name__)

_HEADER = re.compile(rb"^([A-Za-z-]+):[ \t]*(.*?)\r?\n$")
_MAX_HEADER_LINE = 8192
_DISCARD_CHUNK = 1 << 16
PREAUTH_MAX_BYTES = 64 * 1024  # TCP, before authentication: initialize is all a client may send


NO_FRAMING = (
    "invalid message header: missing Content-Length (each message is framed as `Content-Length: N`, a blank "
    "line, then N bytes of JSON; newline-delimited JSON is not read)"
)


class FrameError(Exception):
    def __init__(self, code: int, message: str, msg_id: Any = None, data: Any = None):
        super().__init__(message)
        self.code, self.message, self.msg_id, self.data = code, message, msg_id, data


EOF_ = object()  # read_message's answer at the end of the stream


async def read_messages(
    reader: asyncio.StreamReader,
    deliver: Callable[[dict[str, Any]], None],
    reject: Callable[[FrameError], None],
    max_bytes: int | Callable[[], int],
) -> None:
    """Read framed messages until EOF, handing each decoded JSON object to ``deliver``.

    ``max_bytes`` may be a callable, read per message: TCP mode allows only small messages before a client has
    authenticated, so a stranger cannot make the server buffer up to the full limit.
    """
    limit = max_bytes if callable(max_bytes) else (lambda: max_bytes)
    while True:
        message = await read_message(reader, reject, limit())
        if message is EOF_:
            return
        if message is None:
            continue
        try:
            deliver(message)
        except Exception as exc:  # a fault in handling one message must not end the connection
            log.exception("could not handle a message")
            reject(FrameError(INTERNAL_ERROR, f"internal error: {type(exc).__name__}", message.get("id")))


async def read_message(reader: asyncio.StreamReader, reject: Callable[[FrameError], None], cap: int) -> Any:
    """The next decoded message; None when it was refused (``reject`` was told why); ``EOF_`` at the end.

    Reads exactly one message's bytes, so a caller can stop between messages (TCP's doorman does).
    """
    try:
        length = await _read_headers(reader)
    except FrameError as exc:
        reject(exc)
        return None
    if length is None:
        return EOF_
    if length > cap:
        # Answer first: a client that lied about the length still hears why, before we skip its bytes.
        reject(FrameError(INVALID_REQUEST, f"message of {length} bytes exceeds the limit of {cap} bytes"))
        await _discard(reader, length)
        return None
    body = await _read_body(reader, length)
    if body is None:
        return EOF_
    try:
        return decode(body)
    except FrameError as exc:
        reject(exc)
        return None


def decode(body: bytes) -> dict[str, Any]:
    """A JSON-RPC message object, or ``FrameError`` (-32700 not JSON, -32600 not a JSON-RPC message)."""
    try:
        data = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise FrameError(PARSE_ERROR, f"parse error: {exc}", recover_id(body)) from None
    except RecursionError:
        raise FrameError(PARSE_ERROR, "parse error: the message is nested too deeply") from None
    if not isinstance(data, dict):
        raise FrameError(
            INVALID_REQUEST, "invalid request: a message must be a JSON object (batches are not supported)"
        )
    msg_id = data.get("id")
    if not isinstance(msg_id, (str, int, type(None))) or isinstance(msg_id, bool):
        raise FrameError(INVALID_REQUEST, "invalid request: id must be a string or an integer")
    if data.get("jsonrpc") != "2.0":
        raise FrameError(INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"', msg_id)
    if "method" in data and not isinstance(data["method"], str):
        raise FrameError(INVALID_REQUEST, "invalid request: method must be a string", msg_id)
    if "method" not in data and "id" not in data:
        raise FrameError(INVALID_REQUEST, "invalid request: no method", msg_id)
    params = data.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        raise FrameError(INVALID_REQUEST, "invalid request: params must be an object or an array", msg_id)
    return data


_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,15}|"[^"\\\x00-\x1f]{0,200}")\s*[,}]')


def recover_id(body: bytes) -> Any:
    """The id of a request whose body does not parse (cut mid-character, bad UTF-8, unbalanced), when it can be
    read before any nested object, so its sender is answered rather than left waiting; else None."""
    head = body[:4096]
    nested = head.find(b"{", head.find(b"{") + 1)
    match = _ID.search(head if nested < 0 else head[:nested])
    if match is None:
        return None
    try:
        return msgspec.json.decode(match.group(1))
    except msgspec.DecodeError:
        return None


async def _read_headers(reader: asyncio.StreamReader) -> int | None:
    """The Content-Length of the next message; None at EOF. Junk lines before a header block are skipped."""
    length: int | None = None
    bad: str | None = None
    seen_any = False
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError:
            return None
        except asyncio.LimitOverrunError as exc:
            await _discard(reader, exc.consumed)
            bad, seen_any = "header line too long", True
            continue
        if len(line) > _MAX_HEADER_LINE:
            bad, seen_any = "header line too long", True
            continue
        if line in (b"\r\n", b"\n"):
            if not seen_any:
                continue
            if bad is not None or length is None:
                raise FrameError(INVALID_REQUEST, f"invalid message header: {bad or 'missing Content-Length'}")
            return length
        if line.lstrip()[:1] in (b"{", b"["):
            # newline-delimited JSON (as ACP and many tools speak): answered, so its sender is not left waiting
            raise FrameError(INVALID_REQUEST, NO_FRAMING, recover_id(line))
        seen_any = True
        match = _HEADER.match(line)
        if match is None:
            bad = "malformed header line"
            continue
        if match.group(1).lower() == b"content-length":
            value = match.group(2).strip()
            if not value.isdigit() or len(value) > 15:
                bad = f"bad Content-Length {value[:40]!r}"
            else:
                length = int(value)


async def _read_body(reader: asyncio.StreamReader, length: int) -> bytes | None:
    """``length`` bytes, read in chunks; None at EOF.

    Chunked, not ``readexactly``: a reader fed with flow control (stdin's pump stops above its high-water mark)
    would never reach ``length`` bytes for a large message if we waited for all of them in its buffer.
    """
    body = bytearray()
    while len(body) < length:
        chunk = await reader.read(min(length - len(body), _DISCARD_CHUNK))
        if not chunk:
            return None
        body += chunk
    return bytes(body)


async def _discard(reader: asyncio.StreamReader, count: int) -> None:
    while count > 0:
        chunk = await reader.read(min(count, _DISCARD_CHUNK))
        if not chunk:
            return
        count -= len(chunk)


def frame(payload: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
