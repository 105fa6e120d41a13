"""The client side: the ``threadline`` command (``main``), its JSON-RPC client, chat, view, replay, demo, charts.

Nothing in ``server`` outside this package imports it; only ``threadline serve`` (and ``acp``) start the server
in process.
"""

from server.cli.main import main

__all__ = ["main"]
