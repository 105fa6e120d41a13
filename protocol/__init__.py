"""Threadline's wire contract: msgspec Structs for every method and notification, and their JSON Schema.

This package is the single source of truth for names on the wire. It imports nothing from ``server``.
Types live in ``protocol.messages`` (requests and results) and ``protocol.updates`` (server -> client).
"""

from protocol.methods import METHODS, NOTIFICATIONS, SERVER_REQUESTS, MethodSpec

__all__ = ["METHODS", "NOTIFICATIONS", "SERVER_REQUESTS", "MethodSpec"]
