"""The Agent Client Protocol front end (``threadline acp``): ACP v1 over stdio, over Threadline's services.

Built on the official ``agent-client-protocol`` SDK, which owns the framing (newline-delimited JSON-RPC) and the
ACP types; this package maps them onto the same runtime, store and agent loop as Threadline's own protocol.
"""

from server.acp.serve import serve_acp

__all__ = ["serve_acp"]
