"""``web_fetch`` against real HTTP servers on 127.0.0.1 (opened by ``allow_private``, as a user would), with a
resolver double for host names: SPEC B-WEB-1 (no private address, directly, by name or by a redirect hop, and the
connection goes to the address checked), and what comes back (Markdown, text, refusals, caps)."""

from __future__ import annotations

import dataclasses
import gzip
import time
from http.server import BaseHTTPRequestHandler

import pytest

from server.tools.web import fetch as web
from server.tools.web.addresses import refusal
from server.tools.web.connect import AddressRefused
from server.tools.web.settings import WebSettings
from server.tools.web.tools import web_fetch
from tests.tools.web.web_support import html, listening, recorded_connects, redirect, serving

PAGE = """
<nav><a href="/">Home</a> <a href="/blog">Blog</a></nav>
<header><p>Site banner</p></header>
<main>
  <h1>Installing widgets</h1>
  <p>Run <code>pip install widgets</code>, then read <a href="https://example.org/guide">the guide</a>.</p>
  <ul><li>fast</li><li>small</li></ul>
  <pre><code class="language-python">import widgets
widgets.run()</code></pre>
  <script>document.title = "pwned"; fetch("/steal")</script>
  <style>.x { color: red }</style>
</main>
<footer>Copyright footer</footer>
<script src="/tracker.js"></script>
"""


def opened(*endpoints: str, **more) -> WebSettings:
    return WebSettings(allow_private=frozenset(endpoints), **more)


class Resolver:
    """A resolver double: answers from ``table`` and records each lookup (the connect uses what it returned)."""

    def __init__(self, **table: list[str]):
        self.table = {k.replace("_", "."): v for k, v in table.items()}
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append((host, port))
        return self.table[host]


async def test_B_WEB_1_an_html_page_arrives_as_markdown_without_its_script(ctx):
    with serving({"/docs": html(PAGE, "Widgets")}) as site:
        settings = dataclasses.replace(ctx.settings, web=opened(site.endpoint))
        result = await web_fetch(dataclasses.replace(ctx, settings=settings), {"url": site.url("/docs")})
    assert result.startswith(f"URL: {site.url('/docs')}\nContent-Type: text/html\nTitle: Widgets\n\n")
    body = result.split("\n\n", 1)[1]
    assert "# Installing widgets" in body
    assert "[the guide](https://example.org/guide)" in body and "`pip install widgets`" in body
    assert "- fast\n- small" in body
    assert "```python\nimport widgets\nwidgets.run()\n```" in body
    for gone in ("pwned", "steal", "color: red", "tracker", "Site banner", "Copyright footer", "Blog"):
        assert gone not in body


async def test_text_and_json_come_back_as_they_are():
    routes = {
        "/notes.txt": (200, {"Content-Type": "text/plain; charset=latin-1"}, "caf\xe9 <b>raw</b>\n".encode("latin-1")),
        "/api.json": (200, {"Content-Type": "application/json"}, b'{"ok": true}'),
        "/untyped": (200, {}, b"# README\nplain words\n"),
    }
    with serving(routes) as site:
        settings = opened(site.endpoint)
        text = await web.fetch(site.url("/notes.txt"), settings)
        data = await web.fetch(site.url("/api.json"), settings)
        untyped = await web.fetch(site.url("/untyped"), settings)
    assert text.text == "café <b>raw</b>\n" and text.content_type == "text/plain"
    assert data.text == '{"ok": true}'
    assert untyped.text == "# README\nplain words\n" and untyped.content_type == "text/plain"


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + bytes(64)),
        ({"Content-Type": "application/octet-stream"}, b"\x7fELF" + bytes(64)),
        ({"Content-Type": "application/pdf"}, b"%PDF-1.7 ..."),
        ({}, b"GIF89a\x00\x01\x00" + bytes(64)),  # no type: sniffed as binary
        ({"Content-Type": "text/plain"}, b"looks like text\x00\x00\x01\x02"),  # says text, is not
    ],
)
async def test_binary_content_is_refused(headers, body):
    with serving({"/file": (200, headers, body)}) as site, pytest.raises(web.FetchFailed, match=r"not text|binary"):
        await web.fetch(site.url("/file"), opened(site.endpoint))


def _stream(total: int, declared: bool):
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        if declared:
            handler.send_header("Content-Length", str(total))
        handler.end_headers()
        chunk = b"x" * 65536
        for _ in range(total // len(chunk) + 1):
            handler.wfile.write(chunk)

    return answer


async def test_a_body_over_10_MB_is_refused_whether_declared_or_streamed():
    big = web.MAX_BODY_BYTES + 1024 * 1024
    with serving({"/declared": _stream(big, True), "/streamed": _stream(big, False)}) as site:
        settings = opened(site.endpoint)
        with pytest.raises(web.FetchFailed, match=r"over the 10485760 byte limit$"):
            await web.fetch(site.url("/declared"), settings)
        with pytest.raises(web.FetchFailed, match="over the 10485760 byte limit: reading stopped there"):
            await web.fetch(site.url("/streamed"), settings)


async def test_a_compressed_body_is_capped_after_decompression():
    bomb = gzip.compress(b"a" * (web.MAX_BODY_BYTES + 4096))  # ~10 KB on the wire
    headers = {"Content-Type": "text/plain", "Content-Encoding": "gzip"}
    with serving({"/bomb": (200, headers, bomb)}) as site, pytest.raises(web.FetchFailed, match="stopped there"):
        await web.fetch(site.url("/bomb"), opened(site.endpoint))


async def test_B_WEB_1_loopback_not_opened_is_refused_and_nothing_connects():
    with listening() as listener, recorded_connects() as connects:
        with pytest.raises(AddressRefused, match=r"loopback address.*allow_private"):
            await web.fetch(f"http://127.0.0.1:{listener.port}/", WebSettings())
        with pytest.raises(AddressRefused):  # another port of an opened host is not opened
            await web.fetch(f"http://127.0.0.1:{listener.port}/", opened(f"127.0.0.1:{listener.port + 1}"))
        assert not listener.connected()
    assert connects == []


async def test_B_WEB_1_a_redirect_hop_to_a_private_address_is_refused_and_nothing_connects():
    with listening() as listener:
        inside = f"http://127.0.0.1:{listener.port}/admin"
        with (
            serving({"/go": redirect(inside)}) as site,
            recorded_connects() as connects,
            pytest.raises(AddressRefused, match=f"127.0.0.1:{listener.port}"),
        ):
            await web.fetch(site.url("/go"), opened(site.endpoint))
        assert [path for path, _ in site.requests] == ["/go"]
        assert not listener.connected()
    assert connects == [("127.0.0.1", site.port)]  # the first hop only


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.5",
        "172.16.3.4",
        "172.31.255.1",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",
        "100.100.100.200",
        "0.0.0.0",
        "127.8.9.10",
        "224.0.0.251",
        "198.18.0.1",
        "::1",
        "::",
        "fc00::1",
        "fd12:3456::1",
        "fd00:ec2::254",
        "fe80::1",
        "::ffff:10.0.0.1",  # IPv4-mapped
        "::ffff:127.0.0.1",
        "::10.0.0.1",  # IPv4-compatible
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "2002:c0a8:101::1",  # 6to4 of 192.168.1.1
    ],
)
async def test_B_WEB_1_a_name_resolving_to_a_private_range_is_refused_before_any_connection(address):
    resolver = Resolver(intranet_example_com=[address])
    with recorded_connects() as connects:
        with pytest.raises(AddressRefused, match=f"intranet.example.com resolves to {address}"):
            await web.fetch("https://intranet.example.com/wiki", WebSettings(), resolver)
        bracketed = f"[{address}]" if ":" in address else address
        with pytest.raises(AddressRefused, match=" is "):  # the address itself in the URL: no lookup
            await web.fetch(f"http://{bracketed}/", WebSettings(), resolver)
    assert connects == [] and resolver.calls == [("intranet.example.com", 443)]
    assert refusal(address) is not None


async def test_B_WEB_1_one_private_address_among_public_ones_refuses_the_host():
    resolver = Resolver(mixed_example=["93.184.215.14", "10.1.2.3"])
    with recorded_connects() as connects, pytest.raises(AddressRefused, match=r"10.1.2.3"):
        await web.fetch("http://mixed.example/", WebSettings(), resolver)
    assert connects == []


def test_B_WEB_1_public_addresses_pass_the_address_policy():
    for address in ("93.184.215.14", "2606:4700::6810:84e5", "64:ff9b::808:808", "8.8.8.8"):
        assert refusal(address) is None, address


async def test_B_WEB_1_the_connection_goes_to_the_address_checked_with_the_host_name_kept():
    """The name is resolved once per connection, by the resolver that checked it; ``.test`` names do not resolve
    anywhere else, so a second lookup by httpx would have failed. The page still sees its own host name."""
    with serving({"/": (200, {"Content-Type": "text/plain"}, b"hello")}) as site:
        resolver = Resolver(docs_test=["127.0.0.1"])
        with recorded_connects() as connects:
            page = await web.fetch(f"http://docs.test:{site.port}/", opened(f"docs.test:{site.port}"), resolver)
    assert page.text == "hello" and page.url == f"http://docs.test:{site.port}/"
    assert resolver.calls == [("docs.test", site.port)]
    assert connects == [("127.0.0.1", site.port)]
    assert site.requests[0][1]["host"] == f"docs.test:{site.port}"


async def test_B_WEB_1_every_redirect_hop_is_resolved_and_checked_again():
    """A name opened on one port redirects to itself on another: the second hop's lookup is checked on its own
    (what the name resolved to before counts for nothing) and refused."""
    with listening() as listener:
        target = f"http://docs.test:{listener.port}/next"
        with serving({"/start": redirect(target)}) as site, recorded_connects() as connects:
            resolver = Resolver(docs_test=["127.0.0.1"])
            with pytest.raises(AddressRefused, match=f"docs.test resolves to 127.0.0.1.*docs.test:{listener.port}"):
                await web.fetch(f"http://docs.test:{site.port}/start", opened(f"docs.test:{site.port}"), resolver)
        assert resolver.calls == [("docs.test", site.port), ("docs.test", listener.port)]
        assert not listener.connected()
    assert connects == [("127.0.0.1", site.port)]


async def test_same_host_redirects_are_followed_and_another_host_is_only_named():
    with serving({"/old": redirect("/new", 301), "/new": html("<p>moved here</p>"), "/away": redirect("")}) as site:
        site.routes["/away"] = redirect(site.url("/new", host="localhost"))
        settings = opened(site.endpoint, f"localhost:{site.port}")
        moved = await web.fetch(site.url("/old"), settings)
        with recorded_connects() as connects:
            away = await web.fetch(site.url("/away"), settings)
    assert moved.url == site.url("/new") and moved.text == "moved here"
    assert moved.render(site.url("/old")).startswith(f"URL: {site.url('/new')}\n(redirected from {site.url('/old')})")
    assert away.redirected_to == site.url("/new", host="localhost")
    assert "redirects to another host" in away.text and "call web_fetch with that URL" in away.text
    assert connects == [("127.0.0.1", site.port)]  # localhost was named, not connected to


async def test_redirect_loops_stop():
    with (
        serving({"/a": redirect("/b"), "/b": redirect("/a")}) as site,
        pytest.raises(web.FetchFailed, match="more than 5 redirects"),
    ):
        await web.fetch(site.url("/a"), opened(site.endpoint))
    assert len(site.requests) == web.MAX_REDIRECTS + 1


async def test_deny_hosts_refuses_a_host_and_a_redirect_hop_to_it():
    with serving({"/": html("<p>x</p>"), "/jump": redirect("")}) as site:
        site.routes["/jump"] = redirect(f"http://www.docs.test:{site.port}/")  # the www twin: a hop it would follow
        resolver = Resolver(docs_test=["127.0.0.1"], www_docs_test=["127.0.0.1"])
        settings = opened(f"docs.test:{site.port}", f"www.docs.test:{site.port}", deny_hosts=("www.docs.test",))
        with pytest.raises(web.FetchRefused, match=r"www.docs.test is refused by \[web\] deny_hosts"):
            await web.fetch(f"http://docs.test:{site.port}/jump", settings, resolver)
        with pytest.raises(web.FetchRefused, match=r"127.0.0.1 is refused by \[web\] deny_hosts \(127.0.0.1\)"):
            await web.fetch(site.url("/"), opened(site.endpoint, deny_hosts=("127.0.0.1",)))
    assert [path for path, _ in site.requests] == ["/jump"]


async def test_urls_the_tool_never_requests():
    for url, why in [
        ("file:///etc/passwd", "only http:// and https://"),
        ("ftp://example.com/x", "only http:// and https://"),
        ("http://user:secret@example.com/", "user name or password"),
        ("http:///nohost", "names no host"),
        ("not a url", "only http:// and https://"),
    ]:
        with recorded_connects() as connects, pytest.raises(web.FetchFailed, match=why):
            await web.fetch(url, WebSettings())
        assert connects == []


async def test_an_http_error_status_is_a_failure_with_the_start_of_the_page():
    gone = (410, {"Content-Type": "text/html"}, b"<h1>Gone for good</h1>")
    with serving({"/gone": gone}) as site, pytest.raises(web.FetchFailed, match=r"HTTP 410 Gone .*\n# Gone for good"):
        await web.fetch(site.url("/gone"), opened(site.endpoint))


def _drip(handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.end_headers()
    for _ in range(200):  # bounded: the client leaves long before (the write then fails and the thread ends)
        handler.wfile.write(b"x")
        handler.wfile.flush()
        time.sleep(0.2)


async def test_a_server_dripping_bytes_cannot_hold_the_turn(monkeypatch):
    monkeypatch.setattr(web, "TOTAL_SECONDS", 1.0)  # 120 s in use; each read alone is well under its timeout
    with serving({"/drip": _drip}) as site, pytest.raises(web.FetchFailed, match="took longer than 1 s"):
        await web.fetch(site.url("/drip"), opened(site.endpoint))
