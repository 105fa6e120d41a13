"""The front door: stdio and TCP framing, the pygls application, JSON-RPC decoding and the error edge.

Nothing below this package knows a wire code; ``server.edge.errors`` is where domain errors become them, for
Threadline's protocol and for ACP alike.
"""
