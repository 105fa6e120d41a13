"""``web_fetch``'s request: one GET, its redirects followed one checked hop at a time, the body read with a cap.

Each hop's connection goes through ``connect.GuardedTransport`` (SPEC B-WEB-1). A redirect is followed only to the
same host (or its ``www.`` twin) and within ``MAX_REDIRECTS``: the user approved a host, and a hop elsewhere comes
back to the model as a result naming the new URL, which it fetches with another call (asking about that host).
A body over ``MAX_BODY_BYTES`` is refused, by its ``Content-Length`` or as soon as the stream passes the cap
(SPEC B-WEB-2): the raw bytes are read and decoded here (``decode``), one content coding at most, and the decoded
bytes are counted as they are produced, so a compressed bomb stops at the cap with memory near it. HTML becomes
Markdown off the event loop, within a time and depth bound (``convert``); other text comes back as it is; anything
else (images, archives, PDFs) is refused. Whatever goes wrong is ``FetchFailed``, never an error of the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

from server.tools.web.connect import AddressGuard, GuardedTransport, Resolver
from server.tools.web.decode import ACCEPT_ENCODING, CodingFailed, CodingRefused, Decoder
from server.tools.web.settings import WebSettings

MAX_BODY_BYTES = 10 * 1024 * 1024
MAX_REDIRECTS = 5
TIMEOUT_SECONDS = 30.0  # to connect, and between two reads
TOTAL_SECONDS = 120.0
USER_AGENT = "Threadline-web_fetch/0.1 (+a coding agent reading documentation)"
_HTML = ("text/html", "application/xhtml+xml")
_TEXT = (
    "application/json",
    "application/xml",
    "application/javascript",
    "application/ecmascript",
    "application/x-javascript",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/x-sh",
    "application/x-ndjson",
    "application/graphql",
    "application/sql",
)


class FetchRefused(Exception):
    """A host the user's ``deny_hosts`` refuses (a private address is ``connect.AddressRefused``)."""


class FetchFailed(Exception):
    """Not fetched: a bad URL, too big, not text, too many redirects, an HTTP error status."""


@dataclass(frozen=True)
class FetchedPage:
    url: str  # where the content came from, after redirects
    status: int
    content_type: str
    title: str
    text: str
    redirected_to: str | None = None  # a redirect to another host, not followed: ``text`` says so

    def render(self, asked: str) -> str:
        """The tool result: where it came from, then the content."""
        head = [f"URL: {self.url}"] + ([f"(redirected from {asked})"] if self.url != asked else [])
        head += [f"Content-Type: {self.content_type}"] if self.content_type else []
        head += [f"Title: {self.title}"] if self.title else []
        return "\n".join(head) + "\n\n" + self.text


def check_url(raw: str) -> httpx.URL:
    """The URL, if ``web_fetch`` may request it (http or https, a host, no credentials); else ``FetchFailed``."""
    try:
        url = httpx.URL(raw.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise FetchFailed(f"not a valid URL: {raw[:200]!r} ({exc})") from None
    if url.scheme not in ("http", "https"):
        raise FetchFailed(f"only http:// and https:// URLs are fetched, not {raw[:200]!r}")
    if not url.host:
        raise FetchFailed(f"the URL names no host: {raw[:200]!r}")
    if url.userinfo:
        raise FetchFailed("a URL with a user name or password is not fetched (it would send them to the host)")
    return url


def host_of(raw: str) -> str | None:
    """The host a URL names (lower case), or None when ``web_fetch`` would refuse the URL itself."""
    try:
        return hostname(check_url(raw))
    except FetchFailed:
        return None


def hostname(url: httpx.URL) -> str:
    """The host as it is connected to and matched against rules: ASCII (IDNA), lower case, no trailing dot."""
    return url.raw_host.decode("ascii").lower().rstrip(".")


async def fetch(raw_url: str, web: WebSettings, resolver: Resolver | None = None) -> FetchedPage:
    """GET the URL under B-WEB-1; ``FetchRefused``, ``AddressRefused``, ``FetchFailed`` or ``httpx.HTTPError`` say
    why not. The whole fetch, redirects included, ends after ``TOTAL_SECONDS`` (a server dripping bytes under
    the per-read timeout cannot hold the turn)."""
    url = check_url(raw_url)
    try:
        async with asyncio.timeout(TOTAL_SECONDS):
            return await _fetch(url, web, resolver)
    except TimeoutError:
        raise FetchFailed(f"{url} took longer than {TOTAL_SECONDS:g} s and was abandoned") from None


async def _fetch(url: httpx.URL, web: WebSettings, resolver: Resolver | None) -> FetchedPage:
    guard = AddressGuard(web.allow_private, resolver)
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "text/html, text/*;q=0.9, application/json;q=0.8, */*;q=0.1",
        "Accept-Encoding": ACCEPT_ENCODING,
    }
    async with httpx.AsyncClient(
        transport=GuardedTransport(guard),
        follow_redirects=False,
        trust_env=False,
        timeout=httpx.Timeout(TIMEOUT_SECONDS),
        headers=headers,
    ) as client:
        for _ in range(MAX_REDIRECTS + 1):
            if rule := web.denied_host(hostname(url)):
                raise FetchRefused(f"{hostname(url)} is refused by [web] deny_hosts ({rule})")
            try:
                async with client.stream("GET", url) as response:
                    target = _redirect(response)
                    if target is None:
                        return await _page(response)
            except httpx.InvalidURL as exc:  # httpx builds the next request from ``Location`` even unfollowed
                raise FetchFailed(f"{url} answered with a URL that cannot be read ({exc})") from None
            if not _same_site(hostname(url), hostname(target)):
                text = (
                    f"{url} redirects to another host: {target}\n"
                    "It was not followed. To read it, call web_fetch with that URL (the user may be asked about "
                    "the new host)."
                )
                return FetchedPage(str(url), response.status_code, "", "", text, redirected_to=str(target))
            url = target
    raise FetchFailed(f"more than {MAX_REDIRECTS} redirects, the last to {url}")


def _redirect(response: httpx.Response) -> httpx.URL | None:
    """The next hop of a redirect response (checked like the first URL), or None."""
    location = response.headers.get("location")
    if not response.is_redirect or not location:
        return None
    try:
        target = response.url.join(location)
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchFailed(f"{response.url} redirects to an invalid URL {location[:200]!r} ({exc})") from None
    return check_url(str(target))


def _same_site(a: str, b: str) -> bool:
    return a == b or a == f"www.{b}" or b == f"www.{a}"


async def _page(response: httpx.Response) -> FetchedPage:
    media, charset = _media(response)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise FetchFailed(f"{response.url} is {int(declared)} bytes, over the {MAX_BODY_BYTES} byte limit")
    if media and not _textual(media):
        raise FetchFailed(f"{response.url} is {media}, not text: web_fetch reads HTML and text only")
    body = await _read_capped(response)
    if not media:
        media = _sniff(body, str(response.url))
    elif b"\0" in body[:8192] and media not in _HTML:
        raise FetchFailed(f"{response.url} says {media} but its content is binary: web_fetch reads text only")
    if media in _HTML:
        from server.tools.web.convert import page_to_markdown

        title, text = await page_to_markdown(body, charset)
    else:
        title, text = "", body.decode(charset or "utf-8", errors="replace")
    if response.status_code >= 400:
        excerpt = text[:2000] + ("\n[...]" if len(text) > 2000 else "")
        raise FetchFailed(f"HTTP {response.status_code} {response.reason_phrase} from {response.url}\n{excerpt}")
    return FetchedPage(str(response.url), response.status_code, media, title, text)


def _media(response: httpx.Response) -> tuple[str, str | None]:
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    charset = response.charset_encoding
    try:
        if charset:
            "".encode(charset)
    except LookupError:  # a charset Python does not know: read as UTF-8, with replacements
        charset = None
    return media, charset


def _textual(media: str) -> bool:
    return media.startswith("text/") or media in _HTML or media in _TEXT or media.endswith(("+json", "+xml", "+yaml"))


def _sniff(body: bytes, url: str) -> str:
    """The type of a body served without one: HTML, text, or refused as binary."""
    head = body[:8192]
    if b"\0" in head:
        raise FetchFailed(f"{url} has no content type and its content is binary: web_fetch reads text only")
    start = head.lstrip()[:100].lower()
    return "text/html" if start.startswith((b"<!doctype html", b"<html")) else "text/plain"


async def _read_capped(response: httpx.Response) -> bytes:
    """The body, decoded (``decode.Decoder``), refused as soon as the bytes on the wire or the decoded bytes pass
    ``MAX_BODY_BYTES``: each decoded piece is at most ``decode.STEP`` long, so nothing past the cap is held."""
    try:
        decoder = Decoder(response.headers.get("content-encoding", ""), MAX_BODY_BYTES)
    except CodingRefused as exc:
        raise FetchFailed(f"{response.url} is refused: {exc}") from None
    chunks: list[bytes] = []
    size = wire = 0

    def keep(pieces: Iterator[bytes]) -> None:
        nonlocal size
        for piece in pieces:
            size += len(piece)
            if size > MAX_BODY_BYTES:
                raise FetchFailed(f"{response.url} is over the {MAX_BODY_BYTES} byte limit: reading stopped there")
            chunks.append(piece)

    try:
        async for raw in response.aiter_raw():
            wire += len(raw)
            if wire > MAX_BODY_BYTES:
                raise FetchFailed(f"{response.url} is over the {MAX_BODY_BYTES} byte limit: reading stopped there")
            keep(decoder.feed(raw))
        keep(decoder.end())
    except CodingFailed as exc:
        raise FetchFailed(f"{response.url} could not be decoded: {exc}") from None
    return b"".join(chunks)
