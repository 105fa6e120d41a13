"""The macOS side of B-SBX-1: the same policy as a Seatbelt profile (SBPL) for ``sandbox-exec -p PROFILE``.

Generated here and unit-tested as text (tests/sandbox/test_seatbelt.py); it cannot run on Linux, and the server
does not yet apply it on macOS (``runner.support`` reports macOS as not enforced, so every command asks). In SBPL
the last matching rule wins, so the denials (read-only ``.git/``, hidden ``deny_read``) come after the grants.
"""

from __future__ import annotations

from server.sandbox.policy import SandboxPolicy

# What any program needs to start and run on macOS (after Codex's and Chromium's base profiles): process
# control of its own children, system information, the shared-memory and Mach services libSystem uses.
_BASE = """(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.notification_center")
  (global-name "com.apple.logd")
  (global-name "com.apple.trustd.agent"))
(allow ipc-posix-sem)
(allow ipc-posix-shm-read* ipc-posix-shm-write-create ipc-posix-shm-write-data)
(allow pseudo-tty)
(allow file-read* file-write-data file-ioctl
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))
(allow file-read*)"""


# A path with a component ``.git`` in any case (macOS file systems ignore case): SBPL matches it at the syscall,
# so a repository created during the command is covered too, unlike the mounts on Linux.
_GIT_ANYWHERE = '#"/\\.[Gg][Ii][Tt](/|$)"'


def quote(path: str) -> str:
    """An SBPL string literal: backslashes and double quotes escaped, nothing else is special inside quotes."""
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def profile(policy: SandboxPolicy) -> str:
    lines = [_BASE]
    if policy.writable:
        lines.append("(allow file-write*\n" + "\n".join(f"  (subpath {quote(p)})" for p in policy.writable) + ")")
    if policy.read_only:
        lines.append("(deny file-write*\n" + "\n".join(f"  (subpath {quote(p)})" for p in policy.read_only) + ")")
    if policy.mode == "workspace-write":  # every .git at any depth, made before or during the command (B-SBX-4)
        lines.append(f"(deny file-write*\n  (regex {_GIT_ANYWHERE}))")
    if policy.deny_read:
        lines.append(
            "(deny file-read* file-write*\n" + "\n".join(f"  (subpath {quote(p)})" for p in policy.deny_read) + ")"
        )
    if policy.network:
        lines.append("(allow network-outbound)\n(allow network-inbound)\n(allow system-socket)")
    else:  # local unix sockets only (a build's own helpers); no IP at all
        lines.append('(allow network-outbound (remote unix-socket (path-regex #"^/private/tmp/")))')
    return "\n".join(lines) + "\n"


def command(policy: SandboxPolicy, argv: list[str]) -> list[str]:
    """``argv`` run under the profile (``/usr/bin/sandbox-exec -p PROFILE -- argv``)."""
    return ["/usr/bin/sandbox-exec", "-p", profile(policy), "--", *argv]
