"""``web_fetch`` and ``web_search`` as the model calls them.

Both run in the server, never in the session's sandboxed commands (which have no network). ``web_fetch`` asks per
host unless a rule allows it (``server.agent.approvals``); ``web_search`` asks nothing: it reaches only the
provider the user configured, and is offered only then (``search_tools``).
"""

from __future__ import annotations

from typing import Any

import httpx

from server.tools.base import Tool, ToolContext, ToolDenied, ToolFailure, require_str, schema
from server.tools.web.settings import WebSettings

# The fetching and searching machinery is imported by the first call: most runs make none, and every start
# (``threadline exec`` in CI) would pay for it.

WEB_FETCH = "web_fetch"
WEB_SEARCH = "web_search"


async def web_fetch(ctx: ToolContext, args: dict[str, Any]) -> str:
    from server.tools.web import fetch
    from server.tools.web.connect import AddressRefused

    url = require_str(args, "url")
    try:
        page = await fetch.fetch(url, ctx.settings.web)
    except (fetch.FetchRefused, AddressRefused) as exc:
        raise ToolDenied(f"Permission denied: {exc}") from None
    except fetch.FetchFailed as exc:
        raise ToolFailure(str(exc)) from None
    except httpx.HTTPError as exc:
        raise ToolFailure(f"{url[:200]}: {type(exc).__name__}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - whatever a page or a server does, the model reads it (B-WEB-2)
        raise ToolFailure(f"{url[:200]} could not be fetched: {type(exc).__name__}: {str(exc)[:500]}") from None
    return page.render(url.strip())


async def web_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    from server.tools.web import search

    query = require_str(args, "query").strip()
    if not query:
        raise ToolFailure("Invalid arguments: 'query' must not be blank")
    web = ctx.settings.web
    try:
        results = await search.search(query, web)
    except search.SearchFailed as exc:
        raise ToolFailure(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - whatever the provider answers, the model reads it (B-WEB-2)
        raise ToolFailure(f"the search failed: {type(exc).__name__}: {str(exc)[:500]}") from None
    return search.render(query, web.search_provider or "", results)


FETCH_TOOL = Tool(
    WEB_FETCH,
    "Fetch a web page over http(s) and return it as Markdown (HTML pages) or as text. For documentation and other "
    "public pages: local and private network addresses are refused, binary files and bodies over 10 MB too. The "
    "user may be asked once per host.",
    schema(["url"], url={"type": "string", "description": "The http:// or https:// URL."}),
    web_fetch,
    approval="fetch",
)
SEARCH_TOOL = Tool(
    WEB_SEARCH,
    "Search the web; returns a short list of results (title, URL, snippet). Read a result with web_fetch.",
    schema(["query"], query={"type": "string"}),
    web_search,
)
TOOLS = [FETCH_TOOL]


def search_tools(web: WebSettings) -> dict[str, Tool]:
    """``web_search`` when a provider is configured, else nothing (the tool is not offered)."""
    return {WEB_SEARCH: SEARCH_TOOL} if web.search_provider else {}
