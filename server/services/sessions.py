"""The session use cases: create, import, update and delete a session, and its remembered grants."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any, Protocol, cast

import msgspec

from protocol.base import OpenAIMessage
from protocol.messages import McpServerInfo, RememberedApproval
from protocol.sessions import ApprovalPolicy
from server.agent.models import checked_model_name
from server.agent.remembered import Remembered, revoke
from server.errors import InvalidParams
from server.project.workspace import checked_folder, normalized_folder
from server.sandbox.mode import copy_mode
from server.services import worktrees
from server.services.context_view import ContextNeeds, prepare_view
from server.services.needs import CoreExtensions, CoreFiles, CoreStore
from server.transcript import StoredSession
from server.transcript.convert import from_openai
from server.transcript.session_rows import UNTITLED as UNTITLED  # a session's name until a prompt names it
from server.worktrees.record import WorktreeRecord


class SessionsNeeds(ContextNeeds, CoreFiles, Protocol):
    """What the session use cases use of the ``Core``: an import reads its view (``prepare_view``), so the
    context use cases' needs too."""


class McpNeeds(CoreStore, CoreExtensions, Protocol):
    """What listing a folder's or a session's MCP servers uses."""


log = logging.getLogger(__name__)


async def create_session(
    core: SessionsNeeds,
    cwd: str,
    title: str | None = None,
    approval_policy: str | None = None,
    model: str | None = None,
    mcp_servers: list[dict[str, Any]] | None = None,
) -> StoredSession:
    """A new session; everything is checked before anything is stored (an unknown model is ModelNotFound)."""
    folder = checked_folder(cwd)
    model = checked_model_name(core.settings, model)
    servers = mcp_servers or []
    check_mcp_servers(core, servers, folder)
    stored = await core.store.create_session(str(folder), title, approval_policy, model)
    if servers:
        core.mcp.set_client_servers(core.sessions.get(stored.id).mcp, servers, folder)
    return stored


async def create_worktree_session(
    core: SessionsNeeds, cwd: str, worktree: str | bool, base: str | None, **options: Any
) -> tuple[StoredSession, WorktreeRecord]:
    """B-WT-1: a new session in a new worktree of ``cwd``'s repository (its folder: ``cwd``'s place in it). The
    session's own checks run first; a session that cannot be stored takes its worktree away again."""
    folder = checked_folder(cwd)
    checked_model_name(core.settings, options.get("model"))
    check_mcp_servers(core, options.get("mcp_servers") or [], folder)
    made, inside = await worktrees.make(core, folder, worktree, base)
    try:
        stored = await create_session(core, str(inside), **options)
        await worktrees.keep(core, stored.id, made)
    except BaseException:
        await worktrees.forget_made(made)
        raise
    return stored, made


def check_mcp_servers(core: SessionsNeeds, servers: list[dict[str, Any]], cwd: Path) -> None:
    try:
        core.mcp.check_client_servers(servers, cwd)
    except ValueError as exc:
        raise InvalidParams(str(exc)) from None


async def keep_mcp_servers(core: SessionsNeeds, session_id: str, servers: list[dict[str, Any]]) -> None:
    """A client's MCP servers for a stored session (ACP sends them on every ``session/new|load|resume``)."""
    stored, session = await core.session(session_id)
    try:
        core.mcp.set_client_servers(session.mcp, servers, Path(stored.cwd))
    except ValueError as exc:
        raise InvalidParams(str(exc)) from None


async def import_session(
    core: SessionsNeeds, cwd: str, title: str | None, history: list[OpenAIMessage]
) -> tuple[StoredSession, int]:
    """Store a history given as OpenAI-shaped messages (never calling a model), then read it into its view state
    once, so opening the session, here or after a restart, is fast. Returns the session and how many it stored."""
    messages = [from_openai(m, f"messages[{i}]") for i, m in enumerate(history)]
    for i, msg in enumerate(messages):
        msg.validate(f"messages[{i}]")
    stored = await core.store.create_session(str(normalized_folder(cwd)), title or "Imported session")
    await core.store.append_messages(stored.id, messages)
    try:
        await prepare_view(core, stored.id)
    except Exception:
        log.exception("preparing the view of imported session %s failed", stored.id)
    return stored, len(messages)


async def update_session(
    core: CoreStore, session_id: str, model: Any = msgspec.UNSET, approval_policy: Any = msgspec.UNSET
) -> StoredSession:
    """Set the session's model and/or approval policy (``UNSET``: left as it is); both apply from its next model
    call. Checked before anything is written: a bad call changes nothing."""
    stored = await core.store.get_session(session_id)
    if model is not msgspec.UNSET:
        await core.store.set_model(stored.id, checked_model_name(core.settings, model))
    if approval_policy is not msgspec.UNSET:
        await core.store.set_approval_policy(stored.id, approval_policy)
    return await core.store.get_session(stored.id)


async def delete_session(core: SessionsNeeds, session_id: str, force: bool = False) -> None:
    """Remove the session's rows, then its artifact files (R-SRC-1's one exception: an explicit delete).

    A running or starting turn is cancelled first and awaited, so it never calls the model again. The sessions its
    ``task`` calls ran go with it (B-SUB-1): they are part of its work, and listed nowhere once it is gone. A
    worktree session's worktree and branch go too, refused (``UnmergedWork``) while they hold work its base has
    not merged, unless ``force`` (B-WT-1)."""
    await core.store.get_session(session_id)
    worktree = await worktrees.before_delete(core, session_id, force)
    children = await core.store.child_session_ids(session_id)
    for child in children:  # a subagent's own worktree (task {isolation: "worktree"}) is checked the same way
        await worktrees.before_delete(core, child, force)
    await core.sessions.delete(session_id, lambda: core.store.delete_session(session_id))  # cancels the children
    shutil.rmtree(core.settings.artifacts_dir / session_id, ignore_errors=True)
    core.blobs.drop_session(session_id)
    if worktree is not None:
        await worktrees.after_delete(worktree)
    for child in children:
        await delete_session(core, child, force=True)


async def remembered_approvals(core: SessionsNeeds, session_id: str) -> list[Remembered]:
    _, session = await core.session(session_id)
    return (await session.approvals()).list()


async def revoke_approval(core: SessionsNeeds, session_id: str, approval_id: str) -> Remembered:
    """Forget one "allow always"; the next such call asks (``ApprovalNotFound`` if unknown)."""
    _, session = await core.session(session_id)
    return await revoke(core.store, await session.approvals(), session_id, approval_id)


def approval_item(r: Remembered) -> RememberedApproval:
    """A remembered grant as the wire lists it (``listApprovals``, ``revokeApproval``)."""
    return RememberedApproval(id=r.id, tool=r.tool, scope=r.scope, covers=r.covers, created_at=r.created_at)


def policy(value: str | None) -> ApprovalPolicy | None:
    """A stored approval policy as the wire type (the store checks it is one of the policies when it writes)."""
    return cast("ApprovalPolicy | None", value)


def is_running(core: CoreStore, session_id: str) -> bool:
    """Whether a turn of the session runs now (in this process)."""
    handle = core.sessions.peek(session_id)
    return handle is not None and handle.turns.is_running()


async def stored(core: CoreStore, session_id: str) -> StoredSession:
    """The stored session (``SessionNotFound`` when there is none)."""
    return await core.store.get_session(session_id)


async def list_sessions(
    core: CoreStore, cwd: str | None, limit: int | None, include_children: bool
) -> tuple[list[StoredSession], dict[str, dict[str, Any]]]:
    """The sessions (of a folder, or all) newest first, and the usage totals of each that has any."""
    folder = None if cwd is None else str(normalized_folder(cwd))
    sessions = await core.store.list_sessions(folder, limit, include_children)
    return sessions, await core.store.usage_totals([s.id for s in sessions])


async def fork_session(core: CoreStore, session_id: str, at_seq: int | None) -> StoredSession:
    """A new session holding ``session_id``'s messages up to ``at_seq`` (all: None), in its sandbox mode."""
    if at_seq is not None and at_seq < 0:
        raise InvalidParams("atSeq must be >= 0")
    forked = await core.store.fork_session(session_id, at_seq)
    await copy_mode(core.store, session_id, forked.id)
    return forked


async def mcp_servers(core: McpNeeds, session_id: str | None) -> list[McpServerInfo]:
    """The MCP servers configured for a folder's sessions (None: the user's), or running for a session."""
    if session_id is None:
        return await core.mcp.list(core.store, None, None)
    found, session = await core.session(session_id)
    return await core.mcp.list(core.store, (session.id, session.mcp), Path(found.cwd))


async def forget_mcp_servers(core: McpNeeds, session_id: str) -> None:
    """A front end closed the session: its MCP servers stop unless another session uses them."""
    _, session = await core.session(session_id)
    core.mcp.forget_session(session_id, session.mcp)
