"""MCP servers from the npm registry for the tests: installed into ``tests/fakes/npm`` on first use.

``tests/run.sh`` installs them up front; a test run without that set-up installs them here. Without npm the tests
that need them fail saying so (they are never skipped silently).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "npm"
EVERYTHING = FOLDER / "node_modules" / ".bin" / "mcp-server-everything"


def ensure_installed() -> Path:
    if EVERYTHING.exists():
        return EVERYTHING
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            "npm is needed for the MCP registry tests (@modelcontextprotocol/server-everything); "
            "install Node.js and npm, or run tests/run.sh"
        )
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(FOLDER)], check=True, timeout=600
    )
    return EVERYTHING
