"""Domain errors: what went wrong, with the stable ``data.code`` a client sees.

Modules below the edge raise these and know nothing of JSON-RPC; ``server.edge.rpc.to_rpc_error`` (and
``server.acp.errors`` for ACP) is the one place they become wire errors: ``internal`` ones -32603 (the server's
fault), the rest -32602 (the request's fault), each with ``data.code``.
"""

from __future__ import annotations

__all__ = [
    "ApprovalNotFound",
    "ArtifactNotFound",
    "CheckoutNotClean",
    "DomainError",
    "InvalidArtifactRequest",
    "InvalidCwd",
    "InvalidMessage",
    "InvalidParams",
    "McpConfigError",
    "ModelNotFound",
    "NotAGitRepository",
    "ProcessNotFound",
    "SessionNotFound",
    "StorageFailure",
    "TurnAlreadyRunning",
    "TurnNotFound",
    "TurnNotRunning",
    "UnmergedWork",
    "UnsupportedContent",
    "WorktreeExists",
]


class DomainError(Exception):
    """A failure a client should see; ``code`` is its ``data.code``, ``internal`` says whose fault it is."""

    code = "InvalidParams"
    internal = False

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def details(self) -> dict[str, object]:
        """What ``data`` carries besides ``code`` (a client can act on it without parsing the message)."""
        return {}


class SessionNotFound(DomainError):
    code = "SessionNotFound"


class ArtifactNotFound(DomainError):
    code = "ArtifactNotFound"


class InvalidCwd(DomainError):
    code = "InvalidCwd"


class TurnAlreadyRunning(DomainError):
    code = "TurnAlreadyRunning"


class InvalidParams(DomainError):
    """A param the schema admits but the method refuses; ``code`` may name it more precisely (``InvalidImage``)."""

    code = "InvalidParams"


class InvalidMessage(InvalidParams):
    """A message the store will not keep (a content part it cannot represent)."""

    code = "InvalidMessage"


class StorageFailure(DomainError):
    """The disk refused a write or a read (read-only, full, corrupt). Nothing was half-written."""

    code = "StorageFailure"
    internal = True


class TurnNotRunning(DomainError):
    code = "TurnNotRunning"


class TurnNotFound(DomainError):
    code = "TurnNotFound"


class ProcessNotFound(DomainError):
    """A background process id this server does not hold for the session."""

    code = "ProcessNotFound"


class ApprovalNotFound(DomainError):
    code = "ApprovalNotFound"


class ModelNotFound(DomainError):
    """A model name that is not a configured ``[models.NAME]``."""

    code = "ModelNotFound"


class InvalidArtifactRequest(InvalidParams):
    """A range or search the artifact reader refuses (a client sees ``InvalidParams``)."""

    code = "InvalidParams"


class McpConfigError(InvalidParams):
    """An MCP server entry that cannot be used; the message names the entry and the field."""

    code = "InvalidParams"


class UnsupportedContent(InvalidParams):
    """Prompt content the agent did not advertise (ACP audio)."""

    code = "UnsupportedContent"


class UnknownCommand(InvalidParams):
    """A ``/name`` that names no command; ``data.commands`` lists the known ones."""

    code = "UnknownCommand"

    def __init__(self, name: str, known: list[str]):
        super().__init__(f"unknown command /{name}; known commands: {', '.join('/' + k for k in known) or 'none'}")
        self.known = known

    def details(self) -> dict[str, object]:
        return {"commands": self.known}


class NotAGitRepository(InvalidParams):
    """B-WT-1: a worktree was asked for a folder in no git repository (or in a bare one)."""

    code = "NotAGitRepository"


class WorktreeExists(InvalidParams):
    """B-WT-1: the worktree's name is in use in that repository (its branch, folder or git's worktree entry)."""

    code = "WorktreeExists"


class CheckoutNotClean(InvalidParams):
    """B-WT-1: the main checkout has changes, is mid-merge/rebase, or is not on the base: nothing was merged."""

    code = "CheckoutNotClean"


class UnmergedWork(InvalidParams):
    """B-WT-1: deleting a worktree session would lose work its branch or worktree holds (``force`` to do it)."""

    code = "UnmergedWork"
