"""Which project-level MCP servers the user allowed to start, per project folder (``$THREADLINE_HOME``).

A cloned repository must not run programs by being opened, so a server from ``.mcp.json`` starts only once the
client approved it. "Allow always" is kept in ``mcp-trust.json`` under the data folder, keyed by the project
folder and the server's configuration key, so an edited ``.mcp.json`` (another command) asks again. Only names and
hashes are stored, never the command line or its environment. ``revoke`` forgets a grant.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from server.mcp.config import McpServerConfig

FILE = "mcp-trust.json"


class ProjectTrust:
    def __init__(self, home: Path, file: str = FILE):
        self._path = home / file  # project hooks keep theirs apart (server.hooks.service, hooks-trust.json)

    def allowed(self, project: Path, config: McpServerConfig) -> bool:
        return self.allowed_key(project, config.name, config.key)

    def allow(self, project: Path, config: McpServerConfig) -> None:
        self.allow_key(project, config.name, config.key)

    def allowed_key(self, project: Path, name: str, key: str) -> bool:
        return self._load().get(str(project), {}).get(name) == key

    def allow_key(self, project: Path, name: str, key: str) -> None:
        data = self._load()
        data.setdefault(str(project), {})[name] = key
        self._save(data)

    def revoke(self, project: Path, name: str) -> bool:
        data = self._load()
        found = data.get(str(project), {}).pop(name, None) is not None
        if found:
            self._save({k: v for k, v in data.items() if v})
        return found

    def _load(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save(self, data: dict[str, Any]) -> None:
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self._path)
