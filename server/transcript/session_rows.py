"""Session rows: create, read, list, update, fork and delete a session (the row its messages hang on).

A mixin of ``Store``. Deleting a session drops its messages, events, artifact, file checkpoint and view rows with it
(foreign keys cascade); only the FTS index, which has no foreign key, is cleared by hand.
"""

from __future__ import annotations

import re
import sqlite3
from typing import TYPE_CHECKING, Any

from server.errors import SessionNotFound
from server.transcript.queries import Queries
from server.transcript.recent import RecentAppends
from server.transcript.records import MESSAGE_COLUMNS, Artifact, StoredSession, new_id, now

SESSION_COLUMNS = (
    "id, title, cwd, created_at, updated_at, last_seq, parent_id, approval_policy, model, parent_tool_call_id"
)
UNTITLED = "New session"  # a session created without a title, until its first prompt names it
TITLE_MAX_CHARS = 80


_TAG_BLOCK = re.compile(r"<([A-Za-z_][\w\-]*)(?:\s[^>]*)?>(.*?)</\1>", re.DOTALL)


def prompt_words(prompt: str) -> str:
    """What the user wrote, without the tag blocks a client wraps around it or adds beside it (avante sends
    ``<previous_user_message>Write b.txt</previous_user_message>``): the text outside the blocks, else the first
    block's own text."""
    outside = _TAG_BLOCK.sub(" ", prompt)
    if outside.strip():
        return outside
    first = _TAG_BLOCK.search(prompt)
    return prompt_words(first.group(2)) if first is not None else prompt


def title_of(prompt: str) -> str | None:
    """A session's title from its first prompt (``prompt_words``): the first non-blank line, spaces collapsed, at
    most ``TITLE_MAX_CHARS`` (cut at a word where one is near, marked with an ellipsis); None for a blank prompt."""
    line = next((" ".join(line.split()) for line in prompt_words(prompt).splitlines() if line.strip()), "")
    if len(line) <= TITLE_MAX_CHARS:
        return line or None
    cut = line[: TITLE_MAX_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > TITLE_MAX_CHARS // 2 else cut).rstrip() + "…"


class SessionQueries(Queries):
    """``Store`` methods for ``sessions``."""

    _recent: RecentAppends  # the store's: what it appended lately, forgotten with a deleted session

    if TYPE_CHECKING:  # ``ArtifactQueries``'

        async def list_artifacts(self, session_id: str) -> list[Artifact]: ...

    async def create_session(
        self,
        cwd: str,
        title: str | None = None,
        approval_policy: str | None = None,
        model: str | None = None,
        parent: tuple[str, str] | None = None,
    ) -> StoredSession:
        """``parent``: (session id, tool call id) of the ``task`` call a subagent's session runs for (B-SUB-1)."""
        sid, stamp = new_id("ses_"), now()
        title = title or UNTITLED
        parent_id, call_id = parent or (None, None)
        await self._transact(
            lambda db: db.execute(
                "INSERT INTO sessions (id, title, cwd, created_at, updated_at, approval_policy, model, parent_id,"
                " parent_tool_call_id) VALUES (?,?,?,?,?,?,?,?,?)",
                (sid, title, cwd, stamp, stamp, approval_policy, model, parent_id, call_id),
            )
        )
        return StoredSession(sid, title, cwd, stamp, stamp, 0, parent_id, approval_policy, model, call_id)

    async def get_session(self, session_id: str) -> StoredSession:
        rows = await self._read(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,))
        if not rows:
            raise SessionNotFound(f"no session {session_id!r}")
        return StoredSession(*rows[0])

    async def list_sessions(
        self, cwd: str | None = None, limit: int | None = None, include_children: bool = False
    ) -> list[StoredSession]:
        """Newest first; subagents' sessions (B-SUB-1) only with ``include_children``."""
        sql = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE 1"
        args: list[Any] = []
        if cwd is not None:
            sql += " AND cwd = ?"
            args.append(cwd)
        if not include_children:
            sql += " AND parent_tool_call_id IS NULL"
        sql += " ORDER BY updated_at DESC, id LIMIT ?"
        args.append(limit if limit and limit > 0 else -1)
        return [StoredSession(*row) for row in await self._read(sql, args)]

    async def child_session_ids(self, session_id: str) -> list[str]:
        """The sessions the session's ``task`` calls ran (B-SUB-1), oldest first."""
        rows = await self._read(
            "SELECT id FROM sessions WHERE parent_id = ? AND parent_tool_call_id IS NOT NULL ORDER BY created_at, id",
            (session_id,),
        )
        return [row[0] for row in rows]

    async def set_approval_policy(self, session_id: str, policy: str | None) -> None:
        """The session's approval policy (ACP's mode); None falls back to the server's setting."""
        await self._update_session(session_id, "approval_policy", policy)

    async def title_from_prompt(self, session_id: str, prompt: str) -> None:
        """Name an untitled session after its first prompt (clients listed every session as "New
        session"). Before that prompt is stored; an explicit title, or one already derived, is kept."""
        title = title_of(prompt)
        if title is None:
            return
        await self._transact(
            lambda db: db.execute(
                "UPDATE sessions SET title = ? WHERE id = ? AND title = ?"
                " AND NOT EXISTS (SELECT 1 FROM messages WHERE session_id = ? AND role = 'user')",
                (title, session_id, UNTITLED, session_id),
            )
        )

    async def set_model(self, session_id: str, model: str | None) -> None:
        """The session's named model (``[models.NAME]``); None falls back to the server's default provider."""
        await self._update_session(session_id, "model", model)

    async def _update_session(self, session_id: str, column: str, value: str | None) -> None:
        def update(db: sqlite3.Connection) -> None:
            if db.execute(f"UPDATE sessions SET {column} = ? WHERE id = ?", (value, session_id)).rowcount == 0:
                raise SessionNotFound(f"no session {session_id!r}")

        await self._transact(update)

    async def delete_session(self, session_id: str) -> list[Artifact]:
        """Delete a session with its messages, events and artifact records; returns the artifacts to unlink."""
        await self.get_session(session_id)
        artifacts = await self.list_artifacts(session_id)

        def delete(db: sqlite3.Connection) -> None:
            db.execute(
                "DELETE FROM messages_fts WHERE rowid IN (SELECT id FROM messages WHERE session_id = ?)", (session_id,)
            )
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

        await self._transact(delete, then=lambda _: self._recent.forget(session_id))
        return artifacts

    async def fork_session(self, session_id: str, at_seq: int | None = None) -> StoredSession:
        """Copy messages with ``seq <= at_seq`` (all when None) into a new session; the original is untouched."""
        src = await self.get_session(session_id)
        upto = src.message_count if at_seq is None else min(at_seq, src.message_count)
        sid, stamp = new_id("ses_"), now()
        title = f"{src.title} (fork)"

        def fork(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO sessions (id, title, cwd, created_at, updated_at, parent_id, forked_at_seq, last_seq,"
                " approval_policy, model) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (sid, title, src.cwd, stamp, stamp, session_id, upto, max(upto, 0), src.approval_policy, src.model),
            )
            db.execute(
                f"INSERT INTO messages (session_id, {MESSAGE_COLUMNS}) SELECT ?, {MESSAGE_COLUMNS}"
                " FROM messages WHERE session_id = ? AND seq <= ? ORDER BY seq",
                (sid, session_id, upto),
            )
            db.execute(
                "INSERT INTO messages_fts (rowid, text) SELECT n.id, f.text FROM messages n"
                " JOIN messages o ON o.session_id = ? AND o.seq = n.seq"
                " JOIN messages_fts f ON f.rowid = o.id WHERE n.session_id = ?",
                (session_id, sid),
            )
            # A view snapshot covers only messages before its seq: those it keeps are the fork's too.
            db.execute(
                "INSERT INTO view_snapshots (session_id, seq, head) SELECT ?, seq, head FROM view_snapshots"
                " WHERE session_id = ? AND seq <= ?",
                (sid, session_id, upto),
            )

        await self._transact(fork)
        return StoredSession(
            sid, title, src.cwd, stamp, stamp, max(upto, 0), session_id, src.approval_policy, src.model
        )
