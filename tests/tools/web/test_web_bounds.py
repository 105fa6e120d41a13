"""SPEC B-WEB-2 against real HTTP servers on 127.0.0.1 and the real fetch code: a compressed bomb (one layer or
two) stops at the cap with memory near it, a page nested too deep or too slow to convert comes back as plain text
saying so, and every error of a fetch (an unreadable ``Location`` included) is a tool failure."""

from __future__ import annotations

import dataclasses
import functools
import gzip
import os
import re
import tracemalloc
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.tools import run_tool
from server.tools.web import convert
from server.tools.web import fetch as web
from server.tools.web.decode import STEP, CodingFailed, CodingRefused, Decoder
from server.tools.web.plain import nesting_depth, plain_text
from server.tools.web.settings import WebSettings
from tests.tools.web.web_support import html, serving

BOMB_BYTES = 200 * 1024 * 1024  # what one bomb unpacks to: 20 times the cap


@functools.cache
def zeros_gzipped(size: int = BOMB_BYTES) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    return b"".join([*parts, packer.flush()])


def bombs() -> dict[str, tuple[int, dict[str, str], bytes]]:
    inner = zeros_gzipped()
    layered = gzip.compress(inner, 9)
    return {
        "/one": (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, inner),
        "/two": (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"}, layered),
    }


def opened_ctx(ctx, endpoint: str):
    return dataclasses.replace(
        ctx, settings=dataclasses.replace(ctx.settings, web=WebSettings(allow_private=frozenset([endpoint])))
    )


@pytest.mark.parametrize(("path", "said"), [("/one", "over the 10485760 byte limit"), ("/two", "2 content codings")])
async def test_B_WEB_2_a_gzip_bomb_one_or_two_layers_deep_fails_with_memory_near_the_cap(ctx, path, said):
    """The whole fetch runs under ``tracemalloc``: before the fix one network chunk of the one-layer bomb became
    ~64 MB at once and the two-layer one 200 MB (2 GB with a bigger bomb); now the peak stays near the cap."""
    with serving(bombs()) as site:
        tracemalloc.start()
        try:
            result = await run_tool(opened_ctx(ctx, site.endpoint), "web_fetch", {"url": site.url(path)})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.status == "error" and said in result.content, result.content
    assert "over the 10485760 byte limit" in result.content
    assert peak < 2 * web.MAX_BODY_BYTES + 8 * STEP, f"peak {peak} bytes"


@pytest.mark.parametrize(
    ("coding", "said"),
    [("deflate, gzip", "2 content codings (deflate, gzip)"), ("br", "'br' is not one web_fetch undoes")],
)
async def test_B_WEB_2_a_coding_not_undone_is_refused_before_reading(coding, said):
    answer = (200, {"Content-Type": "text/plain", "Content-Encoding": coding}, b"\x1f\x8b whatever")
    with serving({"/x": answer}) as site, pytest.raises(web.FetchFailed, match=re.escape(said)):
        await web.fetch(site.url("/x"), WebSettings(allow_private=frozenset([site.endpoint])))


async def test_B_WEB_2_gzip_and_deflate_pages_still_arrive_whole():
    text = "".join(f"line {n}: words that compress\n" for n in range(120_000)).encode()  # ~3.5 MB
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    routes = {
        "/gz": (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, gzip.compress(text)),
        "/members": (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, gzip.compress(b"a") * 3),
        "/zlib": (200, {"Content-Type": "text/plain", "Content-Encoding": "deflate"}, zlib.compress(b"zlib ok")),
        "/raw": (
            200,
            {"Content-Type": "text/plain", "Content-Encoding": "deflate"},
            raw_deflate.compress(b"raw ok") + raw_deflate.flush(),
        ),
        "/corrupt": (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, b"this is not gzip at all"),
    }
    with serving(routes) as site:
        settings_ = WebSettings(allow_private=frozenset([site.endpoint]))
        assert (await web.fetch(site.url("/gz"), settings_)).text == text.decode()
        assert (await web.fetch(site.url("/members"), settings_)).text == "aaa"
        assert (await web.fetch(site.url("/zlib"), settings_)).text == "zlib ok"
        assert (await web.fetch(site.url("/raw"), settings_)).text == "raw ok"
        with pytest.raises(web.FetchFailed, match="could not be decoded: its gzip data is corrupt"):
            await web.fetch(site.url("/corrupt"), settings_)
        assert site.requests[0][1]["accept-encoding"] == "gzip, deflate"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.binary(max_size=4000).map(lambda b: b * 50),
    cuts=st.lists(st.integers(min_value=1, max_value=5000), max_size=30),
)
def test_B_WEB_2_decoding_in_bounded_steps_gives_the_original_bytes(data, cuts):
    packed = gzip.compress(data)
    decoder = Decoder("gzip", web.MAX_BODY_BYTES)
    out, pos = [], 0
    for cut in [*cuts, len(packed)]:
        out += list(decoder.feed(packed[pos : pos + cut]))
        pos += cut
    out += list(decoder.end())
    assert b"".join(out) == data and all(len(piece) <= STEP for piece in out)


def test_B_WEB_2_decoder_refusals_are_clear():
    with pytest.raises(CodingRefused, match=re.escape("3 content codings (gzip, gzip, gzip)")):
        Decoder("gzip, gzip,gzip", 10)
    assert Decoder("identity", 10).coding == "identity" and Decoder(" GZIP ", 10).coding == "gzip"
    with pytest.raises(CodingFailed):
        list(Decoder("deflate", 10).feed(b"\xff\xff\xff\xff not deflate at all"))


def deep(levels: int) -> str:
    return "<main>" + "<div><p>level</p>" * levels + "the bottom" + "</div>" * levels + "</main>"


async def test_B_WEB_2_a_deeply_nested_page_comes_back_as_plain_text_saying_so(ctx):
    with serving({"/deep": html(deep(20_000), "Deep"), "/fine": html(deep(30), "Fine")}) as site:
        tool_ctx = opened_ctx(ctx, site.endpoint)
        deep_result = await run_tool(tool_ctx, "web_fetch", {"url": site.url("/deep")})
        fine = await run_tool(tool_ctx, "web_fetch", {"url": site.url("/fine")})
    assert deep_result.status == "ok", deep_result.content
    body = deep_result.content.split("\n\n", 1)[1]
    assert body.startswith("[web_fetch: this page is given as plain text, not Markdown: its elements nest 20004 deep")
    assert "Title: Deep" in deep_result.content and "the bottom" in body and "<div>" not in body
    assert fine.status == "ok" and "the bottom" in fine.content and "plain text" not in fine.content


def converters() -> list[int]:
    """The converter processes alive now (this test's server is this process)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if b"convert_worker.py" in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return [pid for pid in found if _parent(pid) == os.getpid()]


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


async def test_B_WEB_2_a_conversion_over_its_time_is_killed_and_the_text_comes_back(monkeypatch):
    monkeypatch.setattr(convert, "CONVERT_SECONDS", 1.0)  # 20 s in use; a flat 2 MB page takes far longer
    flat = "<p>some <b>text</b> to read</p>" * 70_000
    with serving({"/flat": html(flat, "Flat")}) as site:
        page = await web.fetch(site.url("/flat"), WebSettings(allow_private=frozenset([site.endpoint])))
    assert page.text.startswith("[web_fetch: this page is given as plain text, not Markdown: converting it took")
    assert page.title == "Flat" and page.text.count("some text to read") == 70_000
    assert converters() == []


def test_B_WEB_2_plain_text_and_depth_without_a_parser():
    page = (
        b"<html><head><title>T &amp; x</title><style>a{}</style></head><body><p>Hello <b>w</b></p>"
        b'<script>var a = "<div><div><div>"</script><div>x&lt;y</div></body></html>'
    )
    assert plain_text(page) == ("T & x", "Hello w\n\nx<y")
    assert nesting_depth(page) == 4  # html, body, p, b: the script's text holds no tags
    assert nesting_depth(b"<div></p>" * 300) == 300  # a stray end tag closes nothing
    assert nesting_depth(b"<div><span></div>" * 300) == 2  # an end tag closes what was opened inside
    assert nesting_depth(b"<br><img src=x><hr/>" * 300) == 0
    assert nesting_depth(b"<" * 100_000) == 0


async def test_B_WEB_2_a_location_httpx_cannot_read_is_a_tool_failure(ctx):
    """httpx raises ``InvalidURL`` (not an ``HTTPError``) building the next request from this header, even with
    redirects off: it used to end the turn with -32603."""
    with serving({"/jump": (302, {"Location": "http:x:1/y"}, b"")}) as site:
        result = await run_tool(opened_ctx(ctx, site.endpoint), "web_fetch", {"url": site.url("/jump")})
    assert result.status == "error", result.content
    assert result.content.startswith(f"Tool failed: {site.url('/jump')} answered with a URL that cannot be read")
