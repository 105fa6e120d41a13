"""Entering the Linux sandbox (B-SBX-1) in the process about to exec the command: namespaces, mounts, Landlock.

Stdlib only; runs in the launcher before ``execvp``. The order matters:

1. A new user namespace (so an unprivileged user may make the others), mount namespace, and network namespace
   unless the network is allowed. The user and group map to themselves, so files keep their owners.
2. Mounts, private to this namespace: ``.threadline/`` and every ``.git`` the policy found at the command's start
   (``SandboxPolicy.with_nested_git``, B-SBX-4) bound read-only over themselves (Landlock
   cannot take a right away below a folder it granted, a read-only mount can); each ``deny_read`` folder covered
   by an empty read-only tmpfs, each file by a read-only ``/dev/null``; a private ``/dev/shm``; a private
   ``/dev/pts`` (the user's other terminals out of reach).
3. The loopback interface up, so a test server inside the command can still talk to itself (the host's
   127.0.0.1 stays out of reach: it is another namespace's).
4. Landlock last: write rights only beneath the writable folders. A Landlock-confined process may not mount or
   unmount, so the command cannot lift the mounts of step 2.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

from server.sandbox import landlock
from server.sandbox.policy import SandboxPolicy

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
# statvfs flag -> mount flag: a remount inside a user namespace must keep the flags the outer mount locked
_LOCKED = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx")
_DEVICE_RIGHTS = landlock.WRITE_FILE | landlock.TRUNCATE | landlock.IOCTL_DEV


class SandboxSetupError(OSError):
    pass


_LIBC = ctypes.CDLL(None, use_errno=True)  # bound at import (see server.sandbox.landlock)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise SandboxSetupError(err, f"{what}: {os.strerror(err)}")


def _enc(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_LIBC.mount(_enc(source), _enc(target), _enc(fstype), ctypes.c_ulong(flags), _enc(data)), f"mount {target}")


def _write(path: str, text: str) -> None:
    # Raw os calls, not open(): text I/O may look up the locale's codec (an import) in the forked child.
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter_namespaces(network: bool) -> None:
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | (0 if network else CLONE_NEWNET)
    _check(_LIBC.unshare(flags), "unshare")
    _write("/proc/self/setgroups", "deny")  # required before an unprivileged gid_map
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below leaks back to the host's mounts


def bind_read_only(source: str, target: str) -> None:
    _mount(source, target, None, MS_BIND | MS_REC)
    locked = os.statvfs(source).f_flag
    keep = sum(m for st, m in _LOCKED if locked & st)
    _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | keep)


def hide(path: str) -> None:
    if os.path.isdir(path):
        _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0500")
    else:
        bind_read_only("/dev/null", path)


def private_ptys() -> None:
    """A devpts instance of the command's own on ``/dev/pts`` (and ``/dev/ptmx`` pointing into it): the user's
    terminals are not in it, so a command can neither type into one nor read what is typed there. Where a new
    instance cannot be mounted, an empty read-only folder covers ``/dev/pts``: no terminal at all."""
    if not os.path.isdir("/dev/pts"):
        return
    try:
        _mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
    except SandboxSetupError:
        _mount("tmpfs", "/dev/pts", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
        return
    if os.path.exists("/dev/ptmx"):
        _mount("/dev/pts/ptmx", "/dev/ptmx", None, MS_BIND)


def loopback_up() -> None:
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))


def enter(policy: SandboxPolicy, *, namespaces: bool = True, abi: int | None = None) -> None:
    """Confine this process (see the module doc). Without ``namespaces`` only Landlock applies: writes are
    confined, TCP is denied by Landlock (ABI 4), but ``.git/`` and ``deny_read`` are not protected; the caller
    reports that sandbox as not enforced (B-SBX-2)."""
    abi = landlock.abi_version() if abi is None else abi
    if abi < 1:
        raise SandboxSetupError(0, "this kernel has no Landlock")
    grants = [(path, landlock.write_rights(abi)) for path in policy.writable]
    grants += [(dev, _DEVICE_RIGHTS) for dev in _DEVICES]
    if namespaces:
        enter_namespaces(policy.network)
        private_ptys()
        grants.append(("/dev/pts", _DEVICE_RIGHTS))  # the private instance: the command's own terminals only
        for path in policy.read_only:
            if os.path.exists(path):  # resolved by the policy; absent ones cannot be mounted over (docs/SANDBOX.md)
                bind_read_only(path, path)
        for path in policy.deny_read:
            if os.path.exists(path):
                hide(path)
        if os.path.isdir("/dev/shm"):  # POSIX semaphores (multiprocessing) need it; a private one leaks nothing
            _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
            grants.append(("/dev/shm", landlock.write_rights(abi)))
        if not policy.network:
            loopback_up()
    # With a network namespace the network is already gone, and TCP on its own loopback stays usable; without one,
    # Landlock's TCP rules are what is left (ABI 4).
    landlock.restrict_self(abi, grants, deny_tcp=not policy.network and not namespaces)
