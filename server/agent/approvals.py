"""Approvals before commands and file writes (protocol/README.md ``requestApproval``).

Policy ``ask`` asks for both, ``autoEdit`` asks only for commands, ``auto`` asks for neither; ``plan`` (plan mode)
runs only the tools that need no approval (reading, searching, ``read_artifact``, ``search_transcript``,
``update_plan``, ``web_search``) and ``web_fetch`` (asking per host), and refuses the rest without asking. Every
request and decision is stored as an event.

Two rules keep a hostile repository or model from turning a convenience into code execution:

- *Execution-bearing paths always ask* under every policy but ``auto``, whatever was allowed "always": writes
  into ``.git/`` (``core.fsmonitor`` runs at the next ``git status``), ``.threadline/`` (``hooks.toml`` and the
  rest), ``.mcp.json`` (the MCP servers a session starts), ``.vscode/``, ``.github/workflows/``, ``AGENTS.md``,
  ``.envrc``, anything under ``$THREADLINE_HOME`` (the server's own config and approval memory), and
  ``save_memory`` (it changes every later session).
- *Outside the sandbox a person decides* (B-SBX-2, B-SBX-3): a command asking to run unconfined (``escalate``)
  asks under every policy but ``auto``, and "always" never covers it; where the session's sandbox cannot be
  enforced every command asks, under every policy. Under ``autoEdit`` a confined command runs without asking.
  The user's ``[approvals]`` rules are checked after these, as remembered grants are, so neither lets a
  command out of the sandbox unasked; unattended (``threadline exec``), whatever asks is refused and ``denial``
  tells the model why.
- *"Always" covers exactly what the request showed*: one exact command, never a compound one (``;``, ``&&``,
  ``|``, ``$(...)``, backticks, redirections), which is allowed once instead; for a file tool, that tool on
  ordinary files in the folder of the file shown, and below it, checked on the path as the write resolves it. It is
  remembered for the session (rebuilt from the stored events after a restart, and re-read before each check so a
  revoke by another server counts; ``server.agent.remembered``), clients can list and revoke it, and the request's
  ``detail`` says what it will cover.
- *A fetch asks per host* (B-WEB-1): ``web_fetch`` can carry data out in its URL, so it asks under every policy
  but ``auto`` (in plan mode too, where it may run because it only reads) unless its host is allowed: by a
  remembered "always" (``web_fetch:<host>``, that host only) or ``[web] allow_hosts``. ``[web] deny_hosts``
  refuses a host under every policy (``denied_host``).

What allows a call without asking, in order: the policy (``auto``: everything), then, unless the path is
execution-bearing, a remembered "always" or an ``[approvals]`` rule of config.toml (``server.security.approval_rules``),
then ``autoEdit`` for edits. A ``PreToolUse`` hook's allow belongs beside the rules in ``needed``.

*Unattended* (``initializationOptions.unattended``, ``threadline exec``): nobody can answer, so a call that would
ask is refused at once, without a ``requestApproval``, stored as an ``approvalDecided`` rejection with a note, and
the model's tool result says why and what the policy and rules allow, so it can take another way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec

from protocol.updates import FileDiff, RequestApprovalParams, RequestApprovalResult
from server.agent.diffs import unified
from server.agent.remembered import RememberedApprovals, always_scope, describe
from server.sandbox.mode import CommandSandbox
from server.sandbox.policy import is_git_name
from server.security.approval_rules import ApprovalRules
from server.tools import Tool
from server.tools.web.settings import WebSettings
from server.transcript import Store

Ask = Callable[[str, dict[str, Any]], Awaitable[Any]]


PROTECTED_DIRS = (".git", ".threadline", ".vscode", ".github/workflows", ".idea")
# .mcp.json names programs a session starts (rewritten under autoEdit, it ran another command)
PROTECTED_NAMES = ("AGENTS.md", ".envrc", ".env", ".gitattributes", ".gitmodules", ".mcp.json")
PLAN_MODE = "plan mode"  # what decided a call plan mode refused (``CallDecision.by``)
PLAN_MODE_REFUSAL = (
    "Permission denied: {tool} was not run because this session is in plan mode, where only reading, searching "
    "(read_file, list_files, search_files, search_transcript, read_artifact, web_search, and web_fetch after the "
    "user allows the host) and update_plan work. Present your plan instead. The user leaves plan mode by switching "
    "the session's approval policy to ask, autoEdit or auto (updateSession {{approvalPolicy}}, or the editor's mode)."
)


class Approvals:
    def __init__(
        self,
        store: Store,
        ask: Ask,
        policy: str,
        always: RememberedApprovals,
        cwd: Path | None = None,
        home: Path | None = None,
        sandbox: CommandSandbox | None = None,
        rules: ApprovalRules | None = None,
        unattended: bool = False,
        web: WebSettings | None = None,
    ):
        self.store, self._ask, self.policy, self.always = store, ask, policy, always
        self.cwd, self.home, self.sandbox = cwd, home, sandbox
        self.parent: tuple[str, str] | None = None  # a subagent's (parent session, task call), asked with (B-SUB-1)
        self.rules, self.unattended = rules or ApprovalRules(), unattended
        self.web = web or WebSettings()  # [web] allow_hosts / deny_hosts (B-WEB-1)

    async def refresh(self, session_id: str) -> None:
        """Re-read the session's remembered grants (a revoke by another server counts at the next call)."""
        await self.always.refresh(self.store, session_id)

    def plan_mode_refusal(self, tool: Tool) -> str | None:
        """The result of a call plan mode refuses (a write, a command, an MCP tool), or None when it may run."""
        if self.policy != "plan" or tool.approval in (None, "fetch"):  # a fetch reads: plan mode asks per host
            return None
        return PLAN_MODE_REFUSAL.format(tool=tool.name)

    def needed(self, tool: Tool, args: dict[str, Any] | None = None) -> bool:
        return self.judge(tool, args or {})[0] == "ask"

    def judge(self, tool: Tool, args: dict[str, Any]) -> tuple[str, str, str]:
        """Whether the policy asks for this call (``allow``/``ask``), what made it so and why; the policy's part of
        ``server.agent.calls.decide_call``. The sandbox's rules come first (B-SBX-2, B-SBX-3)."""
        if tool.facts.sandboxed and args.get("escalate") not in (None, False) and not _reason(args):
            return "allow", "sandbox", "an escalation without a reason is refused by the tool before it runs"
        host = _fetched_host(tool, args)
        if tool.approval == "fetch" and host is None:
            return "allow", "policy", "an invalid URL is refused by the tool before it connects"
        if _into_git_folder(tool, args):  # nobody is asked to approve what would then be refused anyway
            return "allow", "protected path", "a write into a git folder is refused by the tool under every policy"
        if self.unconfinable(tool):
            return "ask", "sandbox", "the sandbox cannot be enforced here: every command asks"
        if tool.approval is None:
            return "allow", "policy", f"{tool.name} needs no approval"
        if self.policy == "auto":
            return "allow", "policy", "policy auto"
        if tool.facts.sandboxed and args.get("escalate") is True:  # before any grant or rule (B-SBX-3)
            return "ask", "sandbox", "it asks to run outside the sandbox: an escalation always asks"
        if why := self.protected(tool, args):
            return "ask", "protected path", why
        if self.always.allows(tool, args, self.cwd):
            return "allow", "remembered rule", "allowed always earlier in this session"
        # [approvals] rules come after the escalation check above (``protected``): no rule lets a command out of
        # the sandbox unasked (B-SBX-3), as no remembered grant does
        if rule := self.rules.allows(tool.name, args):
            return "allow", "approvals rule", f"[approvals] in config.toml allows {rule}"
        if host is not None and (rule := self.web.allowed_host(host)):
            return "allow", "web rule", f"[web] allow_hosts in config.toml allows {host} ({rule})"
        # MCP tools are "command" too, but never confined: only run_command runs unasked inside the sandbox
        if self.policy == "autoEdit" and tool.facts.sandboxed and self.sandbox and self.sandbox.confines:
            return "allow", "sandbox", "policy autoEdit runs a confined command without asking"
        if self.policy == "autoEdit" and tool.approval == "edit":
            return "allow", "policy", "policy autoEdit allows edits"
        if host is not None:
            return "ask", "policy", f"policy {self.policy} asks before fetching from a host no rule allows ({host})"
        return "ask", "policy", f"policy {self.policy} asks before {tool.approval}s"

    def denied_host(self, tool: Tool, args: dict[str, Any]) -> str | None:
        """Why ``[web] deny_hosts`` refuses this fetch, under every policy, or None (each redirect hop is checked
        again by the tool)."""
        host = _fetched_host(tool, args)
        rule = self.web.denied_host(host) if host is not None else None
        return f"{host} is refused by [web] deny_hosts ({rule})" if rule else None

    def sandbox_asks(self, tool: Tool, args: dict[str, Any]) -> bool:
        """Whether the sandbox's rules ask a person about this call whatever else allowed it (a hook's allow):
        a command that would run unconfined (B-SBX-2, B-SBX-3), under every policy but ``auto`` for an escalation."""
        if self.unconfinable(tool):
            return True
        return tool.facts.sandboxed and args.get("escalate") is True and self.policy != "auto" and bool(_reason(args))

    def unconfinable(self, tool: Tool) -> bool:
        """A command in a session whose sandbox cannot be enforced here: it asks, whatever the policy (B-SBX-2)."""
        return tool.facts.sandboxed and self.sandbox is not None and self.sandbox.must_ask

    def protected(self, tool: Tool, args: dict[str, Any]) -> str | None:
        """Why this call must ask under every policy but ``auto`` (an execution-bearing path), or None."""
        if tool.facts.always_ask:
            return f"{tool.name} changes what every later session is told"
        if tool.facts.sandboxed and args.get("escalate") is True:
            return "it asks to run outside the sandbox"
        for key in tool.writes_paths:
            raw = args.get(key)
            if isinstance(raw, str) and (why := self._protected_path(raw)):
                return why
        return None

    def _protected_path(self, raw: str) -> str | None:
        if self.cwd is None:
            return None
        target = Path(os.path.abspath(self.cwd / raw))
        try:
            resolved = target.resolve()
        except (OSError, RuntimeError):  # a link loop: the tool fails on it, as one failed call
            resolved = target
        for path in {target, resolved}:  # as named, and where its links lead
            if self.home is not None and _under(path, self.home):
                return f"{raw} is in Threadline's own data folder"
            for base in {Path(os.path.abspath(self.cwd)), self.cwd.resolve()}:
                if not _under(path, base):
                    continue
                rel = path.relative_to(base).as_posix()
                if any(rel == d or rel.startswith(d + "/") for d in PROTECTED_DIRS) or path.name in PROTECTED_NAMES:
                    return f"{raw} can change what runs or what the agent is told"
        return None

    async def decide(
        self,
        session_id: str,
        turn_id: str,
        call_id: str,
        tool: Tool,
        args: dict[str, Any],
        diff: FileDiff | None = None,
    ) -> str:
        """Ask the client; any failure to get a valid answer counts as a rejection (never a silent allow).
        Unattended, nobody is asked: the call is rejected at once (``denial`` says why)."""
        if self.unattended:
            refused = {"toolCallId": call_id, "tool": tool.name, "decision": "reject", "note": UNATTENDED_NOTE}
            await self.store.add_event(session_id, "approvalDecided", refused, turn_id)
            return "reject"
        outside = self._outside(tool, args)
        scope = None if self.protected(tool, args) or outside else always_scope(tool, args, self.cwd)
        detail = f"{diff.path}\n{unified(diff).rstrip()}" if diff is not None else _detail(tool, args)
        reason = args.get("reason") if args.get("escalate") is True and isinstance(args.get("reason"), str) else None
        params = RequestApprovalParams(
            session_id=session_id,
            turn_id=turn_id,
            tool_call_id=call_id,
            tool=tool.name,
            title=f"{outside}: {tool.title(args)}" if outside else tool.title(args),
            detail=(f"{outside}.\n" if outside else "") + detail + _said(reason) + _covers(tool, args, scope),
            diff=diff,
            # what the note says is offered is all that is offered: no "allow always" without a scope to remember
            options=["allowOnce", "allowAlways", "reject"] if scope is not None else ["allowOnce", "reject"],
            parent_session_id=self.parent[0] if self.parent else None,
            parent_tool_call_id=self.parent[1] if self.parent else None,
            outside_sandbox=True if outside else None,
            reason=reason,
        )
        stored = msgspec.to_builtins(params)
        if diff is not None:  # the whole texts are on disk and in the checkpoint; the event keeps the unified form
            stored["diff"] = {"path": diff.path}
        await self.store.add_event(session_id, "approvalRequested", stored, turn_id)
        try:
            raw = await self._ask("requestApproval", msgspec.to_builtins(params))
            decision = msgspec.convert(raw, RequestApprovalResult).decision
            note = None
        except Exception as exc:  # noqa: BLE001 - client error, bad answer, disconnected client
            decision, note = "reject", f"no valid answer from the client: {exc}"
        payload: dict[str, Any] = {"toolCallId": call_id, "tool": tool.name, "decision": decision}
        granted = decision == "allowAlways" and scope is not None
        if granted:
            payload["scope"] = scope
        elif decision == "allowAlways":
            note = "allowed once: this call cannot be allowed always"
        if note:
            payload["note"] = note
        event = await self.store.add_event(session_id, "approvalDecided", payload, turn_id)
        if granted and scope is not None:
            self.always.add(scope, tool.name, event)
        return decision

    def _outside(self, tool: Tool, args: dict[str, Any]) -> str | None:
        """What the request must say plainly when the command would run unconfined (B-SBX-3), else None."""
        if not tool.facts.sandboxed:
            return None
        if args.get("escalate") is True:
            return "Runs OUTSIDE the sandbox (unconfined, with all your rights)"
        if self.unconfinable(tool) and self.sandbox is not None:
            if self.sandbox.applies:  # Landlock alone: writes and TCP confined, .git/ and deny_read not protected
                return f"Runs only PARTLY CONFINED: the sandbox cannot be fully enforced here ({self.sandbox.support.reason})"
            return f"Runs UNCONFINED: the sandbox cannot be enforced here ({self.sandbox.support.reason})"
        return None

    def denial(self, tool: Tool, args: dict[str, Any]) -> str:
        """The rejected call's tool result: what the model reads, so it can take another way."""
        if not self.unattended:
            return f"Permission denied: the user rejected this {tool.name} call"
        why = self.protected(tool, args)
        clause = f" ({why}, which always needs approval)" if why else ""
        if not why and self.unconfinable(tool) and self.sandbox is not None:  # B-SBX-2: nobody to ask instead
            clause = (
                f" (the sandbox cannot be enforced here: {self.sandbox.support.reason}; without it every command "
                "needs approval, under every policy)"
            )
        allowed = POLICY_ALLOWS.get(self.policy, f"the approval policy is {self.policy!r}")
        if self.policy == "autoEdit" and self.sandbox is not None and self.sandbox.confines:  # B-SBX-3
            allowed = AUTOEDIT_SANDBOXED
        rules = self.rules.describe()
        hosts = ""
        if (host := _fetched_host(tool, args)) is not None:
            clause = f" (it would reach {host}, which no [web] allow_hosts rule allows)"
            listed = ", ".join(self.web.allow_hosts)
            hosts = f" web_fetch reaches these hosts without approval ([web] allow_hosts): {listed}." if listed else ""
        return (
            f"Permission denied: this is an unattended run (nobody can approve anything), and this {tool.name} "
            "call needs approval, so it was not run"
            + clause
            + f". Under the approval policy {self.policy!r}, {allowed}."
            + (f" The user's [approvals] rules also allow these commands: {rules}." if rules else "")
            + hosts
            + " Do not retry this call: do what is allowed instead, or finish and say what needs approval."
        )


def _fetched_host(tool: Tool, args: dict[str, Any]) -> str | None:
    """The host a ``fetch`` tool's URL names, or None (another tool, or a URL the tool refuses)."""
    url = args.get("url")
    if tool.approval != "fetch" or not isinstance(url, str):
        return None
    from server.tools.web.fetch import host_of  # the fetch machinery, only for a fetch

    return host_of(url)


def _into_git_folder(tool: Tool, args: dict[str, Any]) -> bool:
    """A file tool's write naming a ``.git`` component (B-SBX-4): ``server.project.workspace.open_inside`` refuses it."""
    return any(
        isinstance(raw := args.get(key), str) and any(is_git_name(part) for part in raw.split("/"))
        for key in tool.writes_paths
    )


def _reason(args: dict[str, Any]) -> str | None:
    reason = args.get("reason")
    return reason.strip() if isinstance(reason, str) and reason.strip() else None


UNATTENDED_NOTE = "unattended run: nobody can approve, so the call was refused without asking"
# What each policy lets through without asking, in the words the model reads when a call is refused unattended.
POLICY_ALLOWS = {
    "ask": "only reading and searching run without approval: commands and file changes need it",
    "autoEdit": (
        "reading, searching and file edits inside the session folder run without approval: commands and other "
        "tools need it"
    ),
    "auto": "everything runs without approval",
}
AUTOEDIT_SANDBOXED = (
    "reading, searching, file edits inside the session folder and run_command inside the sandbox run without "
    "approval: a command with escalate: true (outside the sandbox) and other tools need it"
)


def _covers(tool: Tool, args: dict[str, Any], scope: str | None) -> str:
    if scope is None:
        return '\n\n["Allow always" is not offered for this call: it will be allowed once only]'
    return f'\n\n["Allow always" covers {describe(scope)}]'


def _under(path: Path, root: Path) -> bool:
    return any(path == r or r in path.parents for r in {Path(os.path.abspath(root)), root.resolve()})


def _detail(tool: Tool, args: dict[str, Any]) -> str:
    if tool.facts.sandboxed:  # the whole command, however long: the title may be cut, this never is
        return f"Command:\n{args.get('command', '')}"
    if (host := _fetched_host(tool, args)) is not None:
        return (
            f"GET {args['url']}\nThe server fetches it from {host}; the URL itself (its path and query) reaches "
            "that host, so it can carry data out of this session."
        )
    if tool.name == "edit_file":
        return f"{args.get('path')}\n--- old\n{args.get('old_string', '')}\n+++ new\n{args.get('new_string', '')}"
    if tool.name == "write_file":
        content = str(args.get("content", ""))
        return f"{args.get('path')} ({len(content)} characters)\n{content[:2000]}"
    return msgspec.json.encode(args).decode()[:4000]


def _said(reason: str | None) -> str:
    """The model's reason, after the command and quoted as its words: one line, escaped (a reason cannot fake a
    ``Command:`` line or a line of ours)."""
    if not reason:
        return ""
    return f"\nThe model says: {json.dumps(reason, ensure_ascii=False)}"


def approval_policy(stored: str | None, default: str) -> str:
    """The policy a session's calls are approved under: its own (``updateSession``, ACP's mode) when set, else
    the server's (config, ``initializationOptions``). Every reader of a session's policy asks here."""
    return stored or default
