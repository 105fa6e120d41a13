"""Threadline: a JSON-RPC backend that runs a coding agent for editor clients."""

__version__ = "0.1.0"
