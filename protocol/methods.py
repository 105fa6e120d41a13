"""The method table: each wire method name with its params and result types.

The server registers handlers from this table, the schema script exports it, and clients read the schema.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import messages as m
from protocol import updates as u
from protocol.editor import EDITOR_REQUESTS


@dataclass(frozen=True)
class MethodSpec:
    name: str
    params: type
    result: type
    summary: str


METHODS: dict[str, MethodSpec] = {
    spec.name: spec
    for spec in [
        MethodSpec(
            "createSession", m.CreateSessionParams, m.CreateSessionResult, "Create an empty session in a folder."
        ),
        MethodSpec(
            "updateSession",
            m.UpdateSessionParams,
            m.UpdateSessionResult,
            "Switch a session's model or approval policy, from its next model call.",
        ),
        MethodSpec(
            "listModels",
            m.ListModelsParams,
            m.ListModelsResult,
            "List the configured models with their context windows and prices.",
        ),
        MethodSpec("listSessions", m.ListSessionsParams, m.ListSessionsResult, "List sessions, newest first."),
        MethodSpec(
            "attachSession",
            m.AttachSessionParams,
            m.AttachSessionResult,
            "Receive a session's updates on this connection, first replaying those after sinceSeq.",
        ),
        MethodSpec(
            "detachSession",
            m.DetachSessionParams,
            m.DetachSessionResult,
            "Stop receiving a session's updates and approval requests on this connection.",
        ),
        MethodSpec(
            "importSession", m.ImportSessionParams, m.ImportSessionResult, "Store OpenAI-shaped messages as a session."
        ),
        MethodSpec(
            "readTranscript", m.ReadTranscriptParams, m.ReadTranscriptResult, "Read stored messages, paged by seq."
        ),
        MethodSpec(
            "readEvents",
            m.ReadEventsParams,
            m.ReadEventsResult,
            "Read a session's stored events (compactions, approvals, notices), paged by id.",
        ),
        MethodSpec(
            "searchTranscript", m.SearchTranscriptParams, m.SearchTranscriptResult, "Full-text search over transcripts."
        ),
        MethodSpec(
            "forkSession",
            m.ForkSessionParams,
            m.ForkSessionResult,
            "Copy a session's messages up to a seq into a new one.",
        ),
        MethodSpec("deleteSession", m.DeleteSessionParams, m.EmptyResult, "Delete a session and its artifacts."),
        MethodSpec(
            "mergeWorktree",
            m.MergeWorktreeParams,
            m.MergeWorktreeResult,
            "Merge a worktree session's branch into its base in the main checkout; a conflict changes nothing.",
        ),
        MethodSpec(
            "discardWorktree",
            m.DiscardWorktreeParams,
            m.DiscardWorktreeResult,
            "Remove a worktree session's worktree (the session stays readable) and, if asked, its branch.",
        ),
        MethodSpec(
            "submitTurn", m.SubmitTurnParams, m.SubmitTurnResult, "Run one agent turn; resolves when the turn ends."
        ),
        MethodSpec("cancelTurn", m.CancelTurnParams, m.CancelTurnResult, "Cancel the running turn of a session."),
        MethodSpec(
            "steerTurn",
            m.SteerTurnParams,
            m.SteerTurnResult,
            "Add a user message to the running turn, delivered at its next model call.",
        ),
        MethodSpec(
            "listCheckpoints",
            m.ListCheckpointsParams,
            m.ListCheckpointsResult,
            "List each turn with the files its tool calls changed and whether they can be restored.",
        ),
        MethodSpec(
            "listProcesses",
            m.ListProcessesParams,
            m.ListProcessesResult,
            "List the background processes a session's commands started, running or ended.",
        ),
        MethodSpec(
            "stopProcess",
            m.StopProcessParams,
            m.StopProcessResult,
            "Stop a session's background process (TERM, then KILL after a grace period).",
        ),
        MethodSpec(
            "rewindFiles",
            m.RewindFilesParams,
            m.RewindFilesResult,
            "Restore every file changed by a turn and later ones to its state before that turn.",
        ),
        MethodSpec(
            "listCommands",
            m.ListCommandsParams,
            m.ListCommandsResult,
            "List the slash commands a session or folder can use (project, user and built-in).",
        ),
        MethodSpec(
            "getContextView",
            m.GetContextViewParams,
            m.ContextViewResult,
            "Build the request view the next model call would send.",
        ),
        MethodSpec(
            "compactSession",
            m.CompactSessionParams,
            m.CompactSessionResult,
            "Compact now: the next request starts from a fresh summary, with an optional focus kept verbatim.",
        ),
        MethodSpec(
            "listApprovals",
            m.ListApprovalsParams,
            m.ListApprovalsResult,
            'List a session\'s remembered "allow always" approvals.',
        ),
        MethodSpec(
            "revokeApproval",
            m.RevokeApprovalParams,
            m.RevokeApprovalResult,
            'Forget one remembered "allow always" approval.',
        ),
        MethodSpec(
            "listMcpServers",
            m.ListMcpServersParams,
            m.ListMcpServersResult,
            "List MCP servers with their state, transport and tools; with sessionId, that session's servers (starting them).",
        ),
        MethodSpec(
            "revokeMcpServerApproval",
            m.RevokeMcpServerApprovalParams,
            m.RevokeMcpServerApprovalResult,
            "Forget a project's remembered approval of one of its .mcp.json servers.",
        ),
        MethodSpec(
            "listHooks",
            m.ListHooksParams,
            m.ListHooksResult,
            "List the hooks a session in this folder gets (config.toml and .threadline/hooks.toml), with approval.",
        ),
        MethodSpec(
            "revokeHooksApproval",
            m.RevokeHooksApprovalParams,
            m.RevokeHooksApprovalResult,
            "Forget a project's remembered approval of its .threadline/hooks.toml.",
        ),
        MethodSpec(
            "checkPolicy",
            m.CheckPolicyParams,
            m.CheckPolicyResult,
            "The decision the live server would make for every tool call of a recorded session; runs no tool.",
        ),
        MethodSpec(
            "readArtifact",
            m.ReadArtifactParams,
            m.ReadArtifactResult,
            "Read a stored tool-output artifact by bytes, lines or search.",
        ),
    ]
}

NOTIFICATIONS: dict[str, type] = {"sessionUpdate": u.SessionUpdate}
SERVER_REQUESTS: dict[str, tuple[type, type]] = {
    "requestApproval": (u.RequestApprovalParams, u.RequestApprovalResult),
    **{name: (params, result) for name, (params, result, _) in EDITOR_REQUESTS.items()},  # editor grounding
}
