"""The SQLite transcript: the source of truth, kept forever (R-SRC-1)."""

from server.transcript.records import (
    Artifact,
    ArtifactNotFound,
    Event,
    InvalidMessage,
    NewMessage,
    Page,
    SearchHit,
    Session,
    SessionNotFound,
    StorageFailure,
    StoredMessage,
    StoreError,
)
from server.transcript.store import Store, new_id, now

__all__ = [
    "Artifact", "ArtifactNotFound", "Event", "InvalidMessage", "NewMessage", "Page", "SearchHit", "Session",
    "SessionNotFound", "StorageFailure", "StoreError", "StoredMessage", "Store", "new_id", "now",
]
