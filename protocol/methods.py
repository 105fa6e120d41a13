"""The method table: each wire method name with its params and result types, and its contract: whether it only
reads (``access``) and whether it holds its session to itself (``exclusive``).

The server's handler table is checked against these rows (``server.methods.registry``: a handler's ``@reads`` or
``@mutates`` must say what its row says, and every row needs a handler), the schema script exports them, and clients
read the schema.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Literal

from protocol import messages as m
from protocol import updates as u
from protocol.editor import EDITOR_REQUESTS

Access = Literal["read", "mutate"]
ACCESS: tuple[Access, ...] = ("read", "mutate")


@dataclass(frozen=True)
class MethodSpec:
    """One wire method. ``access``: a ``"read"`` answers from what is stored and held and never writes; a
    ``"mutate"`` may change the store or the session. ``exclusive``: the method holds its session to itself (a
    mutation only): refused while a turn runs or waits there, and no turn starts there until it ends."""

    name: str
    params: type
    result: type
    summary: str
    _: KW_ONLY
    access: Access
    exclusive: bool

    def __post_init__(self) -> None:
        if self.access not in ACCESS:
            raise ValueError(f"{self.name}: access must be one of {ACCESS}, not {self.access!r}")
        if self.exclusive and self.access != "mutate":
            raise ValueError(f"{self.name}: only a mutation can hold its session exclusively")


METHODS: dict[str, MethodSpec] = {
    spec.name: spec
    for spec in [
        MethodSpec(
            "createSession",
            m.CreateSessionParams,
            m.CreateSessionResult,
            "Create an empty session in a folder.",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "updateSession",
            m.UpdateSessionParams,
            m.UpdateSessionResult,
            "Switch a session's model or approval policy, from its next model call.",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "listModels",
            m.ListModelsParams,
            m.ListModelsResult,
            "List the configured models with their context windows and prices.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "listSessions",
            m.ListSessionsParams,
            m.ListSessionsResult,
            "List sessions, newest first.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "attachSession",
            m.AttachSessionParams,
            m.AttachSessionResult,
            "Receive a session's updates on this connection, first replaying those after sinceSeq.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "detachSession",
            m.DetachSessionParams,
            m.DetachSessionResult,
            "Stop receiving a session's updates and approval requests on this connection.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "importSession",
            m.ImportSessionParams,
            m.ImportSessionResult,
            "Store OpenAI-shaped messages as a session.",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "readTranscript",
            m.ReadTranscriptParams,
            m.ReadTranscriptResult,
            "Read stored messages, paged by seq.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "readEvents",
            m.ReadEventsParams,
            m.ReadEventsResult,
            "Read a session's stored events (compactions, approvals, notices), paged by id.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "searchTranscript",
            m.SearchTranscriptParams,
            m.SearchTranscriptResult,
            "Full-text search over transcripts.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "forkSession",
            m.ForkSessionParams,
            m.ForkSessionResult,
            "Copy a session's messages up to a seq into a new one.",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "mergeWorktree",
            m.MergeWorktreeParams,
            m.MergeWorktreeResult,
            "Merge a worktree session's branch into its base in the main checkout; a conflict changes nothing.",
            access="mutate",
            exclusive=True,
        ),
        MethodSpec(
            "discardWorktree",
            m.DiscardWorktreeParams,
            m.DiscardWorktreeResult,
            "Remove a worktree session's worktree (the session stays readable) and, if asked, its branch.",
            access="mutate",
            exclusive=True,
        ),
        MethodSpec(
            "deleteSession",
            m.DeleteSessionParams,
            m.EmptyResult,
            "Delete a session and its artifacts.",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "submitTurn",
            m.SubmitTurnParams,
            m.SubmitTurnResult,
            "Run one agent turn; resolves when the turn ends.",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "cancelTurn",
            m.CancelTurnParams,
            m.CancelTurnResult,
            "Cancel the running turn of a session.",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "steerTurn",
            m.SteerTurnParams,
            m.SteerTurnResult,
            "Add a user message to the running turn, delivered at its next model call.",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "listCheckpoints",
            m.ListCheckpointsParams,
            m.ListCheckpointsResult,
            "List each turn with the files its tool calls changed and whether they can be restored.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "listProcesses",
            m.ListProcessesParams,
            m.ListProcessesResult,
            "List the background processes a session's commands started, running or ended.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "stopProcess",
            m.StopProcessParams,
            m.StopProcessResult,
            "Stop a session's background process (TERM, then KILL after a grace period).",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "rewindFiles",
            m.RewindFilesParams,
            m.RewindFilesResult,
            "Restore every file changed by a turn and later ones to its state before that turn.",
            access="mutate",
            exclusive=True,
        ),
        MethodSpec(
            "listCommands",
            m.ListCommandsParams,
            m.ListCommandsResult,
            "List the slash commands a session or folder can use (project, user and built-in).",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "getContextView",
            m.GetContextViewParams,
            m.ContextViewResult,
            "Build the request view the next model call would send.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "compactSession",
            m.CompactSessionParams,
            m.CompactSessionResult,
            "Compact now: the next request starts from a fresh summary, with an optional focus kept verbatim.",
            access="mutate",
            exclusive=True,
        ),
        MethodSpec(
            "listApprovals",
            m.ListApprovalsParams,
            m.ListApprovalsResult,
            'List a session\'s remembered "allow always" approvals.',
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "revokeApproval",
            m.RevokeApprovalParams,
            m.RevokeApprovalResult,
            'Forget one remembered "allow always" approval.',
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "listMcpServers",
            m.ListMcpServersParams,
            m.ListMcpServersResult,
            "List MCP servers with their state, transport and tools; with sessionId, that session's servers (starting them).",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "revokeMcpServerApproval",
            m.RevokeMcpServerApprovalParams,
            m.RevokeMcpServerApprovalResult,
            "Forget a project's remembered approval of one of its .mcp.json servers.",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "listHooks",
            m.ListHooksParams,
            m.ListHooksResult,
            "List the hooks a session in this folder gets (config.toml and .threadline/hooks.toml), with approval.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "revokeHooksApproval",
            m.RevokeHooksApprovalParams,
            m.RevokeHooksApprovalResult,
            "Forget a project's remembered approval of its .threadline/hooks.toml.",
            access="mutate",
            exclusive=False,
        ),
        MethodSpec(
            "checkPolicy",
            m.CheckPolicyParams,
            m.CheckPolicyResult,
            "The decision the live server would make for every tool call of a recorded session; runs no tool.",
            access="read",
            exclusive=False,
        ),
        MethodSpec(
            "readArtifact",
            m.ReadArtifactParams,
            m.ReadArtifactResult,
            "Read a stored tool-output artifact by bytes, lines or search.",
            access="read",
            exclusive=False,
        ),
    ]
}

NOTIFICATIONS: dict[str, type] = {"sessionUpdate": u.SessionUpdate}
SERVER_REQUESTS: dict[str, tuple[type, type]] = {
    "requestApproval": (u.RequestApprovalParams, u.RequestApprovalResult),
    **{name: (params, result) for name, (params, result, _) in EDITOR_REQUESTS.items()},  # editor grounding
}
