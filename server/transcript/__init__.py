"""The SQLite transcript: the source of truth, kept forever (R-SRC-1)."""

from server.errors import ArtifactNotFound, InvalidMessage, SessionNotFound, StorageFailure
from server.transcript.records import Artifact, Event, NewMessage, Page, SearchHit, Session, StoredMessage, new_id, now
from server.transcript.store import Store

__all__ = [
    "Artifact",
    "ArtifactNotFound",
    "Event",
    "InvalidMessage",
    "NewMessage",
    "Page",
    "SearchHit",
    "Session",
    "SessionNotFound",
    "StorageFailure",
    "Store",
    "StoredMessage",
    "new_id",
    "now",
]
