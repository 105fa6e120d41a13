"""``web_search``'s providers: a SearXNG server's JSON API or Brave's Web Search API, answered as a short list.

SearXNG: ``GET <search_url>/search?q=...&format=json`` (the server must have the ``json`` format enabled), results
``{results: [{title, url, content}]}``. Brave: ``GET https://api.search.brave.com/res/v1/web/search?q=...&count=N``
with the key in ``X-Subscription-Token``, results ``{web: {results: [{title, url, description}]}}``. The provider
is one the user configured, so it is reached as configured (a self-hosted SearXNG is usually on a private address);
the pages it lists are read with ``web_fetch``, under its rules.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

import httpx

from server.tools.web.settings import BRAVE_URL, WebSettings

MAX_RESULTS = 8
SNIPPET_CHARS = 300
TIMEOUT_SECONDS = 20.0
_TAG = re.compile(r"<[^>]+>")


class SearchFailed(Exception):
    """The provider could not be asked, or answered with an error or something that is not its API's shape."""


@dataclass(frozen=True)
class Result:
    title: str
    url: str
    snippet: str


async def search(query: str, web: WebSettings) -> list[Result]:
    provider = web.search_provider
    if provider == "searxng":
        return await _searxng(query, web)
    if provider == "brave":
        return await _brave(query, web)
    raise SearchFailed("no search provider is configured ([web] search_provider)")


def render(query: str, provider: str, results: list[Result]) -> str:
    if not results:
        return f'No results for "{query}" ({provider}).'
    lines = [f'Results for "{query}" ({provider}):']
    for n, r in enumerate(results, 1):
        lines += ["", f"{n}. {r.title or r.url}", f"   {r.url}"] + ([f"   {r.snippet}"] if r.snippet else [])
    return "\n".join(lines)


async def _searxng(query: str, web: WebSettings) -> list[Result]:
    assert web.search_url is not None  # required with searxng (``settings.parse_web``)
    url = httpx.URL(web.search_url)
    if not url.path.rstrip("/").endswith("/search"):
        url = url.copy_with(path=url.path.rstrip("/") + "/search")
    data = await _get(url, {"q": query, "format": "json"}, {}, "SearXNG")
    items = data.get("results") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise SearchFailed("SearXNG answered without a results list (is the json format enabled on the server?)")
    return _results(items, "content")


async def _brave(query: str, web: WebSettings) -> list[Result]:
    if not web.search_api_key:
        raise SearchFailed(
            f"Brave search needs an API key in the environment variable {web.search_api_key_env} "
            "([web] api_key_env names it), and it is not set"
        )
    headers = {"Accept": "application/json", "X-Subscription-Token": web.search_api_key}
    data = await _get(httpx.URL(web.search_url or BRAVE_URL), {"q": query, "count": str(MAX_RESULTS)}, headers, "Brave")
    if not isinstance(data, dict):
        raise SearchFailed("Brave answered something that is not its API's shape")
    section = data.get("web")  # absent when nothing was found
    items = section.get("results", []) if isinstance(section, dict) else []
    if not isinstance(items, list):
        raise SearchFailed("Brave answered without web results")
    return _results(items, "description")


async def _get(url: httpx.URL, params: dict[str, str], headers: dict[str, str], name: str) -> Any:
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(TIMEOUT_SECONDS)) as client:
            response = await client.get(url, params=params, headers=headers)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:  # InvalidURL: a ``Location`` httpx cannot read
        raise SearchFailed(f"{name} at {url} could not be reached: {type(exc).__name__}: {exc}") from None
    if response.status_code >= 400:
        raise SearchFailed(f"{name} answered HTTP {response.status_code} {response.reason_phrase}")
    try:
        return response.json()
    except ValueError:
        raise SearchFailed(f"{name} answered something that is not JSON") from None


def _results(items: list[Any], snippet_key: str) -> list[Result]:
    results = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            continue
        results.append(Result(_plain(item.get("title")), item["url"], _plain(item.get(snippet_key))[:SNIPPET_CHARS]))
        if len(results) == MAX_RESULTS:
            break
    return results


def _plain(value: Any) -> str:
    """A provider's text without its markup (Brave marks the matched words with ``<strong>``)."""
    text = html.unescape(_TAG.sub("", value)) if isinstance(value, str) else ""
    return " ".join(text.split())
