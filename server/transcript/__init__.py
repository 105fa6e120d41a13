"""The SQLite transcript: the source of truth, kept forever (R-SRC-1)."""

from server.errors import ArtifactNotFound, InvalidMessage, SessionNotFound, StorageFailure
from server.transcript.records import (
    Artifact,
    Event,
    NewMessage,
    SearchHit,
    StoredMessage,
    StoredSession,
    TranscriptPage,
    new_id,
    now,
)
from server.transcript.store import Store

__all__ = [
    "Artifact",
    "ArtifactNotFound",
    "Event",
    "InvalidMessage",
    "NewMessage",
    "SearchHit",
    "SessionNotFound",
    "StorageFailure",
    "Store",
    "StoredMessage",
    "StoredSession",
    "TranscriptPage",
    "new_id",
    "now",
]
