"""Large tool results become artifacts (R-ART-1..3).

A result over ``ARTIFACT_THRESHOLD`` bytes is written whole to ``$THREADLINE_HOME/artifacts/<session>/<id>.txt``
(written to a temporary name and renamed, so a crash never leaves a half artifact under a real id) and the model
gets a head/tail preview with the exact markers. If storage fails the tool's success is unchanged and the model
gets at most ``FALLBACK_CHARS`` characters of the output instead (R-ART-3).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.errors import InvalidArtifactRequest
from server.patterns import DEFAULT_TIMEOUT_SECONDS, ScanError, long_lines_note, run_scan, timeout_note
from server.private_files import open_private, private_folder
from server.transcript import Artifact, Store, new_id, now

ARTIFACT_THRESHOLD = 50 * 1024
HEAD_CHARS = 6000
TAIL_CHARS = 3000
FALLBACK_CHARS = 50_000
MAX_BYTES_READ = 1024 * 1024
MAX_LINES_READ = 5000
MAX_MATCHES = 500


@dataclass(frozen=True)
class Stored:
    """What the model sees of a tool result, and the artifact behind it if one was written."""

    text: str
    artifact: Artifact | None = None
    storage_error: str | None = None


def preview(text: str, artifact_id: str, total_bytes: int) -> str:
    head, tail = text[:HEAD_CHARS], text[-TAIL_CHARS:]
    omitted = total_bytes - len(head.encode()) - len(tail.encode())
    return (
        f"{head}\n[{omitted} bytes omitted from context]\n{tail}\n"
        f"[artifact {artifact_id}] The full output ({total_bytes} bytes) is stored. "
        "Use read_artifact for byte, line, or search access."
    )


def truncated(text: str, reason: str) -> str:
    marker = (
        f"\n[output truncated to fit: {len(text)} characters in all; the full output could not be stored: {reason}]"
    )
    return text[: FALLBACK_CHARS - len(marker)] + marker


class ArtifactStore:
    def __init__(self, root: Path, store: Store, pattern_timeout: float = DEFAULT_TIMEOUT_SECONDS):
        self.root = root
        self.store = store
        self.pattern_timeout = pattern_timeout

    async def keep(self, session_id: str, tool_call_id: str | None, text: str) -> Stored:
        """R-ART-1: small results pass through; large ones are stored and previewed; failures truncate (R-ART-3)."""
        data = text.encode()
        if len(data) <= ARTIFACT_THRESHOLD:
            return Stored(text)
        artifact_id = new_id("artifact-")[:25]
        try:
            path = await asyncio.to_thread(self._write, session_id, artifact_id, data)
            artifact = Artifact(
                artifact_id, session_id, str(path), len(data), text.count("\n") + 1, now(), tool_call_id
            )
            await self.store.add_artifact(artifact)
        except Exception as exc:  # noqa: BLE001 - any storage failure: never turn a tool success into a failure
            return Stored(truncated(text, f"{type(exc).__name__}: {exc}"), storage_error=str(exc))
        return Stored(preview(text, artifact_id, len(data)), artifact)

    def _write(self, session_id: str, artifact_id: str, data: bytes) -> Path:
        folder = self.root / session_id
        private_folder(folder)
        final = folder / f"{artifact_id}.txt"
        tmp = folder / f".{artifact_id}.partial"
        with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_TRUNC), "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        return final

    async def read(
        self,
        session_id: str,
        artifact_id: str,
        *,
        byte_range: tuple[int, int] | None = None,
        line_range: tuple[int, int] | None = None,
        search: tuple[str, int | None] | None = None,
    ) -> dict[str, Any]:
        """R-ART-2: by byte range, line range or regex search; another session's id is ``ArtifactNotFound``."""
        artifact = await self.store.get_artifact(session_id, artifact_id)
        if search is not None:
            return {
                "artifactId": artifact.id,
                "totalBytes": artifact.total_bytes,
                "totalLines": artifact.total_lines,
                **await self._search(Path(artifact.path), *search),
            }
        data = await asyncio.to_thread(Path(artifact.path).read_bytes)
        result: dict[str, Any] = {
            "artifactId": artifact.id,
            "totalBytes": len(data),
            "totalLines": artifact.total_lines,
        }
        if line_range is not None:
            start, end = line_range
            if start < 1 or end < start:
                raise InvalidArtifactRequest("lineRange needs 1 <= start <= end")
            lines = data.decode("utf-8", errors="replace").split("\n")
            result["content"] = "\n".join(lines[start - 1 : min(end, start - 1 + MAX_LINES_READ)])
        else:
            offset, length = byte_range or (0, min(len(data), 64 * 1024))
            if offset < 0 or length < 0:
                raise InvalidArtifactRequest("byteRange needs offset >= 0 and length >= 0")
            chunk = data[offset : offset + min(length, MAX_BYTES_READ)]
            result["content"] = chunk.decode("utf-8", errors="replace")
        return result

    async def _search(self, path: Path, pattern: str, max_matches: int | None) -> dict[str, Any]:
        """The pattern is the caller's (a client or the model): it runs in a worker killed at the deadline."""
        job = {"op": "artifact", "path": str(path), "pattern": pattern, "limit": min(max_matches or 50, MAX_MATCHES)}
        try:
            result = await run_scan(job, self.pattern_timeout)
        except ScanError as exc:
            raise InvalidArtifactRequest(f"search.pattern: {exc}") from None
        found: dict[str, Any] = {"matches": result.items}
        notes = [timeout_note(self.pattern_timeout)] if result.timed_out else []
        if result.long_lines:
            notes.append(long_lines_note(result.long_lines))
        if notes:
            found["searchNote"] = " ".join(notes)
        return found
