"""A failed command's output, read for what the sandbox denied (B-SBX-3), so the model can ask to escalate.

A denial shows as the error text of the call the kernel refused: EACCES/EPERM for a write outside (Landlock),
EROFS for ``.git/`` (a read-only mount), ENOENT or an empty file for a hidden path, ENETUNREACH or a failed name
lookup for the network. We cannot tell a sandbox denial from an ordinary one for certain, so the note says what
it looks like and what would allow it, and quotes the lines it is based on.
"""

from __future__ import annotations

import re

from server.sandbox.policy import SandboxPolicy

_WRITE = re.compile(r"Permission denied|Operation not permitted|EACCES|EPERM|PermissionError", re.I)
_READ_ONLY = re.compile(r"Read-only file system|EROFS", re.I)
_NETWORK = re.compile(
    r"Network is unreachable|ENETUNREACH|Temporary failure in name resolution|Name or service not known|"
    r"Could not resolve host|getaddrinfo|nodename nor servname|Failed to establish a new connection|"
    r"Couldn't connect to server|Connection refused|ECONNREFUSED|No address associated with hostname",
    re.I,
)
MAX_QUOTED = 3


def looks_denied(output: str, policy: SandboxPolicy) -> tuple[list[str], list[str]]:
    """What in a failed sandboxed process's output looks denied: the kinds of denial (each once, in order) and up
    to ``MAX_QUOTED`` of the lines they were read from."""
    kinds: list[str] = []
    quoted: list[str] = []
    for line in output.splitlines():
        kind = None
        if any(path in line for path in policy.deny_read):
            kind = f"a read of a path the sandbox hides (deny_read: {', '.join(policy.deny_read)})"
        elif _READ_ONLY.search(line):
            kind = "a write to a read-only path (.git/ and .threadline/ are read-only in the sandbox)"
        elif _WRITE.search(line) and policy.mode != "off":
            kind = f"a write outside the writable folders ({_writable(policy)})"
        elif _NETWORK.search(line) and not policy.network:
            kind = "network access (the network is off in the sandbox)"
        if kind is None:
            continue
        if kind not in kinds:
            kinds.append(kind)
        if len(quoted) < MAX_QUOTED:
            quoted.append(line.strip()[:300])
    return kinds, quoted


def denial_note(output: str, policy: SandboxPolicy) -> str | None:
    """The note to add to a failed sandboxed command's result, or None when nothing in it looks denied."""
    kinds, quoted = looks_denied(output, policy)
    if not kinds:
        return None
    lines = "\n".join(f"  {q}" for q in quoted)
    return (
        f"[sandbox: this command ran in the {policy.mode} sandbox and looks denied: {'; '.join(kinds)}.\n{lines}\n"
        "If the task needs it, run it again with escalate: true and a reason: the user is asked, and it then "
        "runs outside the sandbox.]"
    )


def _writable(policy: SandboxPolicy) -> str:
    return ", ".join(policy.writable) if policy.writable else "none"
