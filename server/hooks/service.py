"""Hooks for sessions: which hooks a turn gets, the project-file approval, and running an event's hooks.

User hooks (config.toml) always run. A project's ``.threadline/hooks.toml`` runs only once the user approved that
exact content, asked the way a project's ``.mcp.json`` server is (``server.security.project_approval``, its own file
``hooks-trust.json``): "allow always" is kept per project folder and file digest, so an edited file asks again;
"allow once" and "reject" hold for the session (and that content: ``HookChoices``, which the session's handle
holds). An unattended turn (``for_turn(unattended=True)``: nobody to ask, ``threadline exec``) never runs an
unapproved project file, and says so.

Every run is stored as a ``hookRun`` event and streamed as a ``hookRun`` update (SPEC B-HOOK-1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from protocol import updates as u
from protocol.hooks import HookInfo
from server.emit import Emitter
from server.hooks.config import PROJECT_FILE, HookSpec, ProjectHooks, read_project_hooks
from server.hooks.run import HookResult, run_hook
from server.security.project_approval import Ask, ProjectItem, ProjectTrust, approve

if TYPE_CHECKING:
    from server.sandbox.mode import CommandSandbox
    from server.tools.processes import ProcessGroups
    from server.transcript import Store

HOOK_EVENT = "hookRun"
TRUST_FILE = "hooks-trust.json"


@dataclass
class HookChoices:
    """What was decided about a project's ``.threadline/hooks.toml`` in one session, held by its handle
    (``server.sessions.Session.hooks``); in memory only."""

    decided: dict[str, bool] = field(default_factory=dict)  # file digest -> run ("allow once" / "reject")

    def __bool__(self) -> bool:
        return bool(self.decided)


@dataclass(frozen=True)
class Verdict:
    """What a ``PreToolUse`` run decided about a call: ``deny`` (a block, or a failed hook), ``ask`` or ``allow``."""

    decision: str
    by: str  # "hook: <command>"
    reason: str = ""


@dataclass
class Outcome:
    """What an event's hooks said together."""

    results: list[HookResult] = field(default_factory=list)

    @property
    def context(self) -> str | None:
        parts = [r.context for r in self.results if r.context and r.failure is None]
        return "\n\n".join(parts) if parts else None

    @property
    def blocked(self) -> HookResult | None:
        """The first hook that blocked (``block``/``deny``/exit 2) and gave its reason."""
        return next((r for r in self.results if r.failure is None and r.decision in ("block", "deny")), None)

    def verdict(self) -> Verdict | None:
        """``PreToolUse``: a block or a failure denies (fail closed), then ``ask`` beats ``allow``."""
        for r in self.results:
            if r.failure is not None:
                reason = f"the hook failed ({r.failure}), so the call was blocked"
                if r.sandbox_note:
                    reason = f"{reason}. {r.sandbox_note}"
                return Verdict("deny", f"hook: {r.spec.command}", reason)
            if r.decision in ("block", "deny"):
                return Verdict("deny", f"hook: {r.spec.command}", r.reason or "blocked by a hook")
        for wanted in ("ask", "allow"):
            said = next((r for r in self.results if r.decision == wanted), None)
            if said is not None:
                return Verdict(wanted, f"hook: {said.spec.command}", said.reason or "")
        return None


@dataclass
class SessionHooks:
    """The hooks of one turn (or one offline check), bound to where they run and where their runs are told."""

    specs: tuple[HookSpec, ...]
    session_id: str
    cwd: Path
    secrets: tuple[str, ...] = ()
    store: Store | None = None  # None: runs are not stored (``checkPolicy``)
    emit: Emitter | None = None
    sandbox: CommandSandbox | None = None  # the session's: hooks run under it unless they opt out (B-HOOK-2)
    processes: ProcessGroups | None = None  # the server's: hooks end with it

    def has(self, event: str) -> bool:
        return any(s.event == event for s in self.specs)

    async def run(
        self, event: str, fields: dict[str, Any], tool: str | None = None, call_id: str | None = None
    ) -> Outcome:
        """Run ``event``'s hooks (those whose matcher takes ``tool``) in order; a ``PreToolUse`` block or failure
        stops the rest (the call is blocked either way)."""
        outcome = Outcome()
        payload = {"session_id": self.session_id, "cwd": str(self.cwd), "hook_event_name": event, **fields}
        for spec in self.specs:
            if spec.event != event or not spec.matches(tool):
                continue
            result = await run_hook(spec, payload, self.cwd, self.secrets, self.sandbox, self.processes)
            outcome.results.append(result)
            await self._record(result, tool, call_id)
            if event == "PreToolUse" and (result.failure or result.decision in ("block", "deny")):
                break
        return outcome

    async def _record(self, result: HookResult, tool: str | None, call_id: str | None) -> None:
        record = result.record()
        if tool is not None:
            record["tool"] = tool
        if call_id is not None:
            record["toolCallId"] = call_id
        turn_id = self.emit.turn_id if self.emit else None
        if self.store is not None:
            await self.store.add_event(self.session_id, HOOK_EVENT, record, turn_id)
        if self.emit is None:
            return
        self.emit(msgspec.convert(record, u.HookRun))
        if result.failure and result.spec.event != "PreToolUse":
            self.emit(
                u.Notice(
                    level="warning",
                    message=f"{result.spec.event} hook {result.spec.command!r} {result.failure}; going on without it"
                    + (f". {result.sandbox_note}" if result.sandbox_note else ""),
                )
            )


class HookService:
    def __init__(self, home: Path, user_hooks: tuple[HookSpec, ...]):
        self.user_hooks = user_hooks
        self.trust = ProjectTrust(home, TRUST_FILE)

    def approved(self, cwd: Path, project: ProjectHooks) -> bool:
        return project.problem is None and self.trust.allowed_key(cwd, PROJECT_FILE, project.digest)

    def list(self, cwd: Path) -> tuple[list[HookInfo], list[str]]:
        project = read_project_hooks(cwd)
        specs: list[tuple[HookSpec, bool]] = [(s, True) for s in self.user_hooks]
        problems = []
        if project is not None:
            if project.problem:
                problems.append(project.problem)
            ok = self.approved(cwd, project)
            specs += [(s, ok) for s in project.hooks]
        return [
            HookInfo(
                event=s.event, command=s.command, source=s.source, approved=ok, timeout=s.timeout_s, matcher=s.matcher
            )
            for s, ok in specs
        ], problems

    def revoke(self, cwd: Path) -> bool:
        return self.trust.revoke(cwd, PROJECT_FILE)

    async def for_turn(
        self,
        choices: HookChoices,
        cwd: Path,
        emit: Emitter,
        ask: Ask,
        store: Store | None,
        secrets: tuple[str, ...],
        unattended: bool = False,
        sandbox: CommandSandbox | None = None,
        processes: ProcessGroups | None = None,
    ) -> SessionHooks:
        """The turn's hooks: the user's, then the project's when its file (as it is now) is approved. With
        ``unattended`` (nobody to ask: ``threadline exec``) an unapproved project file does not run. ``choices``: the
        session's (its handle's ``hooks``), where "allow once" and "reject" are kept."""
        specs = list(self.user_hooks)
        project = read_project_hooks(cwd)
        if project is not None and project.problem:
            emit(u.Notice(level="warning", message=f"project hooks not run: {project.problem}"))
        elif (
            project is not None
            and project.hooks
            and await self._approved(choices.decided, cwd, project, emit, ask, unattended)
        ):
            specs += project.hooks
        return SessionHooks(tuple(specs), emit.session_id, cwd, secrets, store, emit, sandbox, processes)

    async def _approved(
        self, decided: dict[str, bool], cwd: Path, project: ProjectHooks, emit: Emitter, ask: Ask, unattended: bool
    ) -> bool:
        listing = "\n".join(
            f"{s.event}{f' [{s.matcher}]' if s.matcher else ''}: {s.command}"
            + ("" if s.sandbox else "  (sandbox = false: runs OUTSIDE the sandbox, with all your rights)")
            for s in project.hooks
        )
        item = ProjectItem(
            project=cwd,
            name=PROJECT_FILE,
            key=project.digest,
            tool_call_id="project_hooks",
            tool="projectHooks",
            title=f"Run the hooks in {PROJECT_FILE}?",
            detail=f'{listing}\n\n["Allow always" covers this file, as it is now, in {cwd}]',
            refused=f"the hooks in {PROJECT_FILE} were not run (not approved)",
        )
        # Unattended, nobody is asked: an unapproved project file never runs
        nobody = f"{PROJECT_FILE} was not run: it is not approved (nobody to ask)" if unattended else None
        return await approve(self.trust, decided, item, emit.session_id, emit, ask, nobody)

    def standing(
        self,
        cwd: Path,
        session_id: str,
        secrets: tuple[str, ...],
        store: Store | None,
        emit: Emitter,
        sandbox: CommandSandbox | None = None,
        processes: ProcessGroups | None = None,
    ) -> SessionHooks:
        """The hooks that run without a turn to ask in (``Notification``): the user's, and the project's when its
        file is approved as it is now; nobody is asked. Under the session's sandbox, as in a turn (B-HOOK-2)."""
        project = read_project_hooks(cwd)
        ok = project is not None and project.problem is None and self.approved(cwd, project)
        specs = [*self.user_hooks, *(project.hooks if project is not None and ok else ())]
        return SessionHooks(tuple(specs), session_id, cwd, secrets, store, emit, sandbox, processes)

    def offline(
        self,
        cwd: Path,
        session_id: str,
        secrets: tuple[str, ...],
        sandbox: CommandSandbox | None = None,
        processes: ProcessGroups | None = None,
    ) -> SessionHooks:
        """``checkPolicy``'s hooks: the user's and the project's (the check is asked for explicitly, to try a
        policy before it is approved or rolled out), under the sandbox as in a turn; runs are not stored or
        streamed."""
        project = read_project_hooks(cwd)
        specs = [*self.user_hooks, *(project.hooks if project is not None else ())]
        return SessionHooks(tuple(specs), session_id, cwd, secrets, sandbox=sandbox, processes=processes)
