"""Starting a server front end in this process (``threadline serve``, ``threadline acp``): the one way the client
package (``server.cli``) leads into the server.

The API keys leave the environment block first, logs go to stderr with secrets masked, then the settings are
loaded and the front end runs until its client leaves.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

from server import redaction
from server.config import Settings, load_settings
from server.config_file import ConfigError
from server.errors import StorageFailure
from server.secret_env import reexec_without_keys, take_keys


def serve(tcp: bool = False, port: int = 0, log_level: str = "WARNING") -> int:
    """The JSON-RPC server over stdio, or on 127.0.0.1 with ``tcp``."""

    def run(settings: Settings) -> int:
        if tcp:
            from server.edge.tcp import serve_tcp

            return serve_tcp(settings, port)
        from server.edge.app import serve_stdio

        return serve_stdio(settings)

    return _serve_with(log_level, run)


def serve_acp(log_level: str = "WARNING") -> int:
    """The Agent Client Protocol front end over stdio."""

    def run(settings: Settings) -> int:
        from server.acp import serve_acp as run_acp

        return run_acp(settings)

    return _serve_with(log_level, run)


def _serve_with(log_level: str, run: Callable[[Settings], int]) -> int:
    reexec_without_keys()  # so no command can read the key from /proc/<server pid>/environ
    logging.basicConfig(
        level=log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        redaction.install()
        settings = load_settings({**os.environ, **take_keys()})
        for key in settings.api_keys():
            redaction.add_secret(key)
        for provider in (settings.provider, *settings.models.values()):
            redaction.add_url_secrets(provider.base_url)
        return run(settings)
    except (ConfigError, StorageFailure) as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 2
