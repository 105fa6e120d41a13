"""``web_search`` against doubles of its two providers, real HTTP servers on 127.0.0.1 shaped as SearXNG's JSON
API and Brave's Web Search API answer."""

from __future__ import annotations

import dataclasses
import json
from urllib.parse import parse_qs, urlsplit

import pytest

from server.config import load_settings
from server.security.secret_env import secret_vars
from server.tools.base import ToolFailure
from server.tools.web import search
from server.tools.web.settings import WebSettings, parse_web
from server.tools.web.tools import search_tools, web_search
from tests.tools.web.web_support import serving

SEARXNG = {
    "query": "pygls tutorial",
    "results": [
        {
            "title": "pygls docs",
            "url": "https://pygls.readthedocs.io/",
            "content": "A pythonic  generic\nlanguage server",
        },
        {"title": "", "url": "https://example.org/untitled", "content": ""},
        {"title": "no url"},
    ]
    + [{"title": f"r{n}", "url": f"https://example.org/{n}", "content": "x" * 1000} for n in range(20)],
}
BRAVE = {
    "type": "search",
    "query": {"original": "pygls tutorial"},
    "web": {
        "type": "search",
        "results": [
            {
                "title": "Getting started with <strong>pygls</strong>",
                "url": "https://pygls.readthedocs.io/en/latest/",
                "description": "Build a <strong>language server</strong> in Python &amp; more.",
                "page_age": "2025-01-01",
            }
        ],
    },
}


def json_answer(data: object) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(data).encode()


def with_web(ctx, web: WebSettings):
    return dataclasses.replace(ctx, settings=dataclasses.replace(ctx.settings, web=web))


async def test_a_searxng_double_answers_a_search(ctx):
    with serving({"/search": json_answer(SEARXNG)}) as provider:
        web = parse_web([], [], [], "searxng", provider.url("/"))
        result = await web_search(with_web(ctx, web), {"query": "pygls tutorial"})
    path, _ = provider.requests[0]
    assert urlsplit(path).path == "/search"
    assert parse_qs(urlsplit(path).query) == {"q": ["pygls tutorial"], "format": ["json"]}
    lines = result.splitlines()
    assert lines[:5] == [
        'Results for "pygls tutorial" (searxng):',
        "",
        "1. pygls docs",
        "   https://pygls.readthedocs.io/",
        "   A pythonic generic language server",
    ]
    assert "2. https://example.org/untitled" in lines  # no title: the URL stands for it
    assert "no url" not in result
    assert result.count("\n\n") == search.MAX_RESULTS  # a short list
    assert "x" * (search.SNIPPET_CHARS + 1) not in result


async def test_a_brave_double_gets_the_key_in_its_header_and_answers(ctx):
    with serving({"/res/v1/web/search": json_answer(BRAVE)}) as provider:
        web = parse_web([], [], [], "brave", provider.url("/res/v1/web/search"), "brave-key-123")
        result = await web_search(with_web(ctx, web), {"query": "pygls tutorial"})
    path, headers = provider.requests[0]
    assert headers["x-subscription-token"] == "brave-key-123" and headers["accept"] == "application/json"
    assert parse_qs(urlsplit(path).query) == {"q": ["pygls tutorial"], "count": [str(search.MAX_RESULTS)]}
    assert result == (
        'Results for "pygls tutorial" (brave):\n\n'
        "1. Getting started with pygls\n"
        "   https://pygls.readthedocs.io/en/latest/\n"
        "   Build a language server in Python & more."
    )
    assert "brave-key-123" not in result


async def test_no_results_and_provider_errors_read_clearly(ctx):
    routes = {"/empty/search": json_answer({"results": []}), "/nojson/search": (200, {}, b"<html>")}
    routes["/brave-empty"] = json_answer({"type": "search", "query": {"original": "q"}})
    routes["/denied"] = (401, {"Content-Type": "application/json"}, b'{"error": "bad token"}')
    routes["/jump/search"] = (302, {"Location": "http:x:1/y"}, b"")  # httpx: InvalidURL, not an HTTPError (B-WEB-2)
    with serving(routes) as provider:
        with pytest.raises(ToolFailure, match=r"SearXNG at .* could not be reached: InvalidURL"):
            await web_search(with_web(ctx, parse_web([], [], [], "searxng", provider.url("/jump"))), {"query": "q"})
        empty = parse_web([], [], [], "searxng", provider.url("/empty"))
        assert await web_search(with_web(ctx, empty), {"query": "nothing"}) == 'No results for "nothing" (searxng).'
        brave_empty = parse_web([], [], [], "brave", provider.url("/brave-empty"), "k")
        assert "No results" in await web_search(with_web(ctx, brave_empty), {"query": "q"})
        with pytest.raises(ToolFailure, match="not JSON"):
            await web_search(with_web(ctx, parse_web([], [], [], "searxng", provider.url("/nojson"))), {"query": "q"})
        with pytest.raises(ToolFailure, match="Brave answered HTTP 401"):
            denied = parse_web([], [], [], "brave", provider.url("/denied"), "secret-key")
            await web_search(with_web(ctx, denied), {"query": "q"})
    with pytest.raises(ToolFailure, match="environment variable MY_BRAVE_KEY"):
        no_key = parse_web([], [], [], "brave", None, None, "MY_BRAVE_KEY")
        await web_search(with_web(ctx, no_key), {"query": "q"})
    with pytest.raises(ToolFailure, match="'query' must be a non-empty string"):
        await web_search(ctx, {"query": ""})


def test_the_tool_is_offered_only_when_a_provider_is_configured():
    assert search_tools(WebSettings()) == {}
    assert list(search_tools(parse_web([], [], [], "searxng", "http://127.0.0.1:8888"))) == ["web_search"]
    for bad, why in [
        (("bing", None), "search_provider must be one of searxng, brave"),
        (("searxng", None), "search_url is required"),
        (("searxng", "127.0.0.1:8888"), "must be an http:// or https:// URL"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_web([], [], [], *bad)


def test_the_brave_key_is_kept_from_commands_and_from_the_server_environment_block(tmp_path):
    """Like a provider key: handed over instead of left in the server's environment block (``secret_vars``), and
    scrubbed from every command's environment and masked in logs (``Settings.api_keys``)."""
    (tmp_path / "config.toml").write_text('[web]\nsearch_provider = "brave"\napi_key_env = "MY_BRAVE"\n')
    env = {"THREADLINE_HOME": str(tmp_path), "MY_BRAVE": "brave-SECRET", "BRAVE_API_KEY": "other"}
    assert secret_vars(env) == {"MY_BRAVE": "brave-SECRET"}
    settings = load_settings(env)
    assert settings.web.search_api_key == "brave-SECRET" and "brave-SECRET" in settings.api_keys()
    assert "brave-SECRET" not in repr(settings.web)
    (tmp_path / "config.toml").write_text("")
    assert secret_vars({**env, "THREADLINE_WEB_SEARCH_PROVIDER": "brave"}) == {"BRAVE_API_KEY": "other"}
    assert secret_vars(env) == {}  # no Brave search: its variable is none of the server's business
    assert load_settings(env).api_keys() == ()
