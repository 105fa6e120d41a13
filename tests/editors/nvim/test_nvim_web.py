"""The web tools in the Neovim plugin, in a real headless Neovim against the real server and the model double:
their lines in the chat carry the globe that marks a tool reaching the web from the server (B-WEB-1); the search
is answered by a SearXNG-shaped double on 127.0.0.1."""

from __future__ import annotations

from tests.editors.nvim.test_nvim_e2e import Provider, nvim, provider, workdir  # noqa: F401  (fixtures)
from tests.tools.web.test_search import SEARXNG, json_answer
from tests.tools.web.web_support import serving


def test_B_WEB_1_a_web_search_shows_as_a_web_tool_line_in_the_chat(nvim, provider: Provider):
    provider.push(
        {"tool_calls": [{"id": "call_s", "name": "web_search", "arguments": {"query": "pygls"}}]},
        {"content": "Found it."},
    )
    with serving({"/search": json_answer(SEARXNG)}) as searxng:
        out = nvim(
            """
          T.open()
          T.turn('search the web')
          return {}
        """,
            THREADLINE_WEB_SEARCH_PROVIDER="searxng",
            THREADLINE_WEB_SEARCH_URL=searxng.url("/"),
        )
    chat = "\n".join(out["chat"])
    assert '  🌐 web_search {"query":"pygls"}  ✓ ok' in chat, chat
    assert "1. pygls docs" in chat and "Found it." in chat
