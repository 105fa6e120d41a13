"""An editor-like client for the editor-grounding tests: it advertises
``capabilities.experimental.threadline.editor`` at ``initialize`` and answers the server's ``editor/*`` requests
from the files on disk, the way an editor answers from its language servers.

Its "language server" is deliberately tiny and deterministic: a line calling ``undefined_name`` is an error, a line
containing ``TODO`` is a warning, ``def NAME`` defines NAME and every other ``NAME(`` references it.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from server.cli.client import Client, RpcError
from tests.e2e.agent_support import Agent, kind_of
from tests.harness import log_path, server_env, start_server

ALL = {"diagnostics": True, "definition": True, "references": True, "workspaceSymbols": True}


def uri_path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def rng(line: int, start: int, end: int) -> dict[str, Any]:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


class Editor:
    """Answers ``editor/*`` (and ``requestApproval`` with allowOnce); every request is kept in ``asked``."""

    def __init__(self, roots: list[Path]):
        self.roots = roots
        self.asked: list[tuple[str, Any]] = []
        self.extra: list[dict[str, Any]] = []  # diagnostics reported besides the files' own (outside files, say)
        self.fail: str | None = None  # answer every editor/* request with this error
        self.hang = False  # never answer editor/* requests

    async def __call__(self, method: str, params: Any) -> Any:
        if method == "requestApproval":
            return {"decision": "allowOnce"}
        self.asked.append((method, params))
        if self.hang:
            await asyncio.sleep(3600)
        if self.fail:
            raise RpcError(-32603, self.fail)
        if method == "editor/diagnostics":
            uris = params.get("uris")
            files = [uri_path(u) for u in uris] if uris else self._files()
            items = [d for f in files for d in self.diagnostics(f)]
            return {"items": items + [d for d in self.extra if not uris or d["uri"] in uris]}
        if method in ("editor/definition", "editor/references"):
            name = self._word(uri_path(params["uri"]), params["position"])
            pattern = rf"\bdef ({name})\b" if method == "editor/definition" else rf"\b({name})\("
            return {"locations": self._find(pattern)}
        if method == "editor/workspaceSymbols":
            found = self._find(rf"\bdef (\w*{re.escape(params['query'])}\w*)")
            return {"symbols": [{"name": "?", "kind": 12, **loc} for loc in found]}
        raise RpcError(-32601, f"unexpected {method}")

    def _files(self) -> list[Path]:
        return sorted(p for root in self.roots for p in root.rglob("*.py"))

    def diagnostics(self, path: Path) -> list[dict[str, Any]]:
        if not path.is_file():
            return []
        items = []
        for n, line in enumerate(path.read_text().splitlines()):
            for m in re.finditer(r"undefined_name", line):
                message = "undefined name 'undefined_name'"
                items.append({"uri": path.as_uri(), "range": rng(n, m.start(), m.end()), "severity": 1,
                              "message": message, "source": "tinylint"})  # fmt: skip
            if "TODO" in line:
                items.append({"uri": path.as_uri(), "range": rng(n, 0, 4), "severity": 2, "message": "a TODO"})
        return items

    def _word(self, path: Path, position: dict[str, int]) -> str:
        line = path.read_text().splitlines()[position["line"]]
        for m in re.finditer(r"\w+", line):
            if m.start() <= position["character"] <= m.end():
                return m.group(0)
        return "@none@"

    def _find(self, pattern: str) -> list[dict[str, Any]]:
        found = []
        for path in self._files():
            for n, line in enumerate(path.read_text().splitlines()):
                for m in re.finditer(pattern, line):
                    found.append({"uri": path.as_uri(), "range": rng(n, m.start(1), m.end(1))})
        return found


async def start_editor_agent(home: Path, fake: Any, editor: Editor, caps: dict[str, Any] | None, **env: str) -> Agent:
    """A server whose client advertises ``caps`` (None: nothing) and answers through ``editor``."""
    proc = await start_server(
        home, "--log-level", "DEBUG", env=server_env(home, fake.url, **{"THREADLINE_PROVIDER": kind_of(fake), **env})
    )
    client = Client(proc)
    capabilities = {} if caps is None else {"experimental": {"threadline": {"editor": caps}}}
    params = {"processId": os.getpid(), "capabilities": capabilities, "rootUri": None, "initializationOptions": {}}
    client.initialize_result = await asyncio.wait_for(client.request("initialize", params), 120)
    client.notify("initialized", {})
    agent = Agent(client, fake, home, log_path(home))
    client.on_request = editor
    return agent
