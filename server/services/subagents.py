"""Subagents (B-SUB-1): the ``task`` tool runs a piece of work in a child session and hands back its answer.

The child is a session of its own in the same folder and database (``parentSessionId``, ``parentToolCallId``),
with its own request views, compactions and window, so what it reads never enters the parent's context: only its
final assistant message comes back, as the ``task`` call's result (an artifact past 50 KB, as any tool's). It
talks to the parent's model (or its named agent's), under the parent's approval policy, with the built-in tools
but ``task`` (no recursion), within a named agent's allow-list. Its updates and approval requests carry both ids;
its usage counts in its own totals and, as ``childUsage`` events, in the parent's. Cancelling the parent's turn
cancels the child (the child's turn is awaited by the parent's tool call). A child that fails, is cancelled on
its own or gives no answer is a failed ``task`` result the parent's model reads; the parent's turn goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from protocol.messages import SubmitTurnResult
from server.agent.batches import TASK_TOOL
from server.agent.definitions import AgentCatalog, AgentDefinition, load_agents
from server.agent.loop import Turn
from server.agent.totals import add_usage
from server.errors import DomainError
from server.providers import ChatProvider
from server.sandbox.mode import copy_mode
from server.services import worktrees
from server.services.needs import CoreModels, CoreStore
from server.sessions import Session
from server.tools import Tool, ToolContext
from server.tools.base import ToolFailure, require_str, schema
from server.transcript import StoredSession, new_id
from server.worktrees.record import WorktreeRecord


class SubagentsNeeds(CoreStore, CoreModels, Protocol):
    """What running a subagent uses of the ``Core`` (building its turn is the caller's ``build``)."""


CHILD_USAGE_EVENT = "childUsage"

CHILD_PROMPT = (
    "You are a subagent: another agent gave you the task below and reads only your final message, not your tool "
    "calls or what they returned. Do the task with the tools you have, then answer with a concise, complete "
    "report of what you found or did (paths, names, line numbers, the conclusion); nothing else reaches it."
)


@dataclass(frozen=True)
class Child:
    """What makes a turn a subagent's (``services.turn_factory.build_turn``)."""

    parent: tuple[str, str]  # (parent session id, its ``task`` tool call id)
    instructions: list[str]  # system messages after the frozen context: the subagent rule, the agent's body
    tools: frozenset[str] | None  # the agent's allow-list; None: every built-in tool
    on_usage: Callable[[dict[str, Any]], Awaitable[None]]


# Puts a child's turn together (``services.turn_factory.build_turn`` with the caller's own needs)
Build = Callable[[Session, StoredSession, ChatProvider, str, Child], Awaitable[Turn]]


def task_tool(core: SubagentsNeeds, parent: Session, cwd: Path, build: Build) -> Tool:
    """The ``task`` tool of one parent turn; its children run at most ``[agents] max_parallel`` at a time."""
    catalog = load_agents(cwd, core.settings.home)
    limit = asyncio.Semaphore(core.settings.agents_max_parallel)

    async def run(ctx: ToolContext, args: dict[str, Any]) -> str:
        description, prompt = require_str(args, "description"), require_str(args, "prompt")
        agent = _agent(catalog, args.get("agent"))
        isolation = args.get("isolation")
        if isolation not in (None, "", "worktree"):
            raise ToolFailure("Invalid arguments: 'isolation' must be \"worktree\" or left out")
        async with limit:
            return await run_child(core, parent, ctx, description, prompt, agent, build, isolation == "worktree")

    return Tool(name=TASK_TOOL, description=describe(catalog), parameters=PARAMETERS, run=run)


def task_spec(core: CoreStore, cwd: Path) -> dict[str, Any]:
    """The ``task`` tool's definition as a session in ``cwd`` sends it (for the budget ``getContextView`` plans)."""
    return task_spec_for(load_agents(cwd, core.settings.home))


def task_spec_for(catalog: AgentCatalog) -> dict[str, Any]:
    """The ``task`` tool's definition offering ``catalog``'s agents."""
    return {
        "type": "function",
        "function": {"name": TASK_TOOL, "description": describe(catalog), "parameters": PARAMETERS},
    }


PARAMETERS = schema(
    ["description", "prompt"],
    description={"type": "string", "description": "a short title for the task (3-6 words)"},
    prompt={"type": "string", "description": "the whole task: the subagent sees nothing else of this chat"},
    agent={"type": "string", "description": "a named agent to run it (see the list above)"},
    isolation={
        "type": "string",
        "enum": ["worktree"],
        "description": "worktree: the subagent works in a git worktree and branch of its own, merged only when "
        "the user asks",
    },
)


def describe(catalog: AgentCatalog) -> str:
    text = (
        "Run a task in a subagent with its own context: it works with the tools (all but task) and returns only "
        "its final report, so what it reads never fills this conversation. Use it for exploration (finding where "
        "something is, reading many files) and for independent pieces of work; several task calls in one answer "
        "run at the same time."
    )
    if catalog.agents:
        text += "\n\nNamed agents (argument agent):\n" + "\n".join(
            f"- {a.name}: {a.description}" for a in catalog.agents.values()
        )
    return text


def _agent(catalog: AgentCatalog, name: Any) -> AgentDefinition | None:
    if name is None or name == "":
        return None
    if not isinstance(name, str) or name not in catalog.agents:
        known = ", ".join(catalog.agents) or "none"
        skipped = "".join(f"\n(skipped: {notice})" for notice in catalog.notices)  # why a file is not an agent
        raise ToolFailure(f"Invalid arguments: no agent {name!r}; available: {known}{skipped}")
    return catalog.agents[name]


async def run_child(
    core: SubagentsNeeds,
    parent: Session,
    ctx: ToolContext,
    description: str,
    prompt: str,
    agent: AgentDefinition | None,
    build: Build,
    isolated: bool = False,
) -> str:
    """Create the child session, run its one turn to the end and return its final answer (or fail saying why).
    ``isolated``: in a worktree and branch of its own (B-WT-1), which the parent's work never sees until merged."""
    parent_stored = await core.store.get_session(parent.id)  # the model and policy as they are now
    call_id = ctx.tool_call_id or new_id("call_")
    if agent is not None and agent.model is not None and agent.model not in core.settings.models:
        raise ToolFailure(f"agent {agent.name!r} names model {agent.model!r}, which is not a configured [models.NAME]")
    made, cwd = await _worktree(core, parent.id, Path(parent_stored.cwd)) if isolated else (None, parent_stored.cwd)
    stored = await core.store.create_session(
        str(cwd),
        title=description[:200],
        approval_policy=parent_stored.approval_policy,
        model=(agent.model if agent else None) or parent_stored.model,
        parent=(parent.id, call_id),
    )
    await copy_mode(core.store, parent.id, stored.id)  # B-SBX-1: a child is confined as its parent is, never looser
    if made is not None:
        await worktrees.keep(core, stored.id, made)
    provider = core.models.provider(core.settings, stored)
    if provider is None:
        raise ToolFailure("no model provider is configured for the subagent")
    child = Child(
        parent=(parent.id, call_id),
        instructions=[CHILD_PROMPT, *([f"# Agent {agent.name}\n\n{agent.instructions}"] if agent else [])],
        tools=agent.tools if agent else None,
        on_usage=lambda event: _count_in_parent(core, parent, stored.id, event, ctx.turn_id),
    )
    handle = core.sessions.get(stored.id)
    turn_id = new_id("turn_")
    turn = await build(handle, stored, provider, turn_id, child)
    task = handle.turns.start(turn_id, lambda: turn.run(prompt, None))
    try:
        result = await asyncio.shield(task)
    except asyncio.CancelledError:  # the parent's turn was cancelled: so is the child's, and it ends first
        task.cancel()
        await asyncio.wait([task])
        raise
    answer = await _answer(core, stored.id, result)
    if made is None:
        return answer
    info = await worktrees.info(made)
    return (
        f"{answer}\n\n(The subagent worked in its own worktree {info.path} on branch {info.branch}: {info.ahead} "
        f"commit(s), {info.files_changed} file(s) changed against {info.base}. Nothing is merged until the user merges "
        f"it: mergeWorktree on session {stored.id}.)"
    )


async def _worktree(core: SubagentsNeeds, parent_id: str, cwd: Path) -> tuple[WorktreeRecord, Path]:
    """A new worktree for an isolated child, from what the parent's folder has now (a worktree parent's commits
    brought into the repository first, so the child can start from them)."""
    await worktrees.after_turn(await worktrees.of_session(core, parent_id))
    try:
        return await worktrees.make(core, cwd, True, None)
    except DomainError as exc:
        raise ToolFailure(f"the subagent cannot have a worktree: {exc.message}") from None


async def _answer(core: SubagentsNeeds, child_id: str, result: SubmitTurnResult) -> str:
    where = f"(subagent session {child_id})"
    if result.stop_reason == "cancelled":
        raise ToolFailure(f"the subagent was cancelled before it finished {where}")
    if result.error is not None:
        raise ToolFailure(f"the subagent failed: {result.error.code}: {result.error.message} {where}")
    messages = await core.store.all_messages(child_id)
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    if last is None or not (last.content or "").strip():
        raise ToolFailure(f"the subagent ended without an answer {where}")
    return last.content or ""


async def _count_in_parent(
    core: SubagentsNeeds, parent: Session, child_id: str, event: dict[str, Any], turn_id: str
) -> None:
    """A child's model call counts in the parent's totals too: live, and as a stored ``childUsage`` event."""
    add_usage(await parent.totals(), event)
    await core.store.add_event(parent.id, CHILD_USAGE_EVENT, {**event, "childSessionId": child_id}, turn_id)
