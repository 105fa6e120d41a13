"""Artifact rows: the large tool outputs kept as files under the data home (``server.artifacts``).

A mixin of ``Store``; a session's delete drops its rows with it.
"""

from __future__ import annotations

from server.errors import ArtifactNotFound
from server.transcript.queries import Queries
from server.transcript.records import Artifact


class ArtifactQueries(Queries):
    """``Store`` methods for ``artifacts``."""

    async def add_artifact(self, artifact: Artifact) -> None:
        await self._transact(
            lambda db: db.execute(
                "INSERT INTO artifacts (id, session_id, tool_call_id, path, total_bytes, total_lines, created_at)"
                " VALUES (?,?,?,?,?,?,?)",
                (
                    artifact.id,
                    artifact.session_id,
                    artifact.tool_call_id,
                    artifact.path,
                    artifact.total_bytes,
                    artifact.total_lines,
                    artifact.created_at,
                ),
            )
        )

    async def get_artifact(self, session_id: str, artifact_id: str) -> Artifact:
        """Artifacts are session-isolated: another session's id is simply not found."""
        rows = await self._read(
            "SELECT id, session_id, path, total_bytes, total_lines, created_at, tool_call_id FROM artifacts"
            " WHERE id = ? AND session_id = ?",
            (artifact_id, session_id),
        )
        if not rows:
            raise ArtifactNotFound(f"no artifact {artifact_id!r} in session {session_id!r}")
        return Artifact(*rows[0])

    async def list_artifacts(self, session_id: str) -> list[Artifact]:
        rows = await self._read(
            "SELECT id, session_id, path, total_bytes, total_lines, created_at, tool_call_id FROM artifacts"
            " WHERE session_id = ?",
            (session_id,),
        )
        return [Artifact(*r) for r in rows]
