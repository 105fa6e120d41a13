"""Large tool outputs kept as artifacts (``readArtifact``) and file checkpoints (``listCheckpoints``,
``rewindFiles``)."""

from __future__ import annotations

from typing import Literal

from protocol.base import Base, SafeInt

# --- artifacts -------------------------------------------------------------------------------------------


class ByteRange(Base):
    offset: SafeInt
    length: SafeInt


class LineRange(Base):
    start: SafeInt
    end: SafeInt


class ArtifactSearch(Base):
    pattern: str
    max_matches: SafeInt | None = None


class ReadArtifactParams(Base):
    session_id: str
    artifact_id: str
    byte_range: ByteRange | None = None
    line_range: LineRange | None = None
    search: ArtifactSearch | None = None


class ArtifactMatch(Base):
    line: int
    text: str
    byte_offset: int


class ReadArtifactResult(Base):
    artifact_id: str
    total_bytes: int
    total_lines: int
    content: str | None = None
    matches: list[ArtifactMatch] | None = None
    search_note: str | None = None  # set when the search stopped at its deadline or searched long lines in part


# --- file checkpoints -------------------------------------------------------------------------

FileChange = Literal["created", "modified"]
RewindStatus = Literal["restored", "unchanged", "conflicted", "notRestorable"]


class ListCheckpointsParams(Base):
    session_id: str


class CheckpointFile(Base):
    path: str  # relative to the session folder
    change: FileChange
    restorable: bool
    tool_call_id: str
    note: str | None = None  # why it is not restorable


class TurnCheckpoints(Base):
    """A turn and the files its tool calls changed (in order; a file written twice is listed twice)."""

    turn_id: str
    seq: int  # the turn's first message (its user message); forkSession at seq - 1 drops the turn
    created_at: str
    files: list[CheckpointFile]


class ListCheckpointsResult(Base):
    turns: list[TurnCheckpoints]
    note: str  # what checkpoints cannot cover (run_command)


class RewindFilesParams(Base):
    session_id: str
    to_turn_id: str
    tool_call_id: str | None = None  # rewind from this call of the turn on, instead of from the turn's start
    dry_run: bool = False
    force: bool = False  # overwrite files changed outside Threadline since (reported conflicted otherwise)


class RewoundFile(Base):
    path: str
    status: RewindStatus  # in a dry run: what would happen
    change: Literal["restored", "removed"] | None = None  # restored its old content, or removed a file a turn made
    detail: str | None = None


class RewindFilesResult(Base):
    files: list[RewoundFile]
    dry_run: bool = False
    note: str = ""
