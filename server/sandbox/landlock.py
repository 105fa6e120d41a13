"""Landlock through raw syscalls (ctypes): the filesystem part of the Linux sandbox (B-SBX-1).

Stdlib only, because it runs in the child between fork and exec (``server.sandbox.launch``). The constants are the
kernel's UAPI (``include/uapi/linux/landlock.h``); each right exists from the ABI noted, and a ruleset may only
name the rights its kernel knows, so ``rights_for(abi)`` trims them. Landlock is an allow-list: the rights a ruleset
*handles* are denied everywhere but beneath the paths a rule grants them on. We handle every write-like right (and
never the read rights: reads are allowed by default, the denied ones are hidden by the mount namespace).
"""

from __future__ import annotations

import ctypes
import os
import platform

# x86_64, aarch64 and riscv64 share these numbers (the unified syscall table, since Linux 5.13).
_SYSCALLS = {"create_ruleset": 444, "add_rule": 445, "restrict_self": 446}
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights (LANDLOCK_ACCESS_FS_*)
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2: rename/link across folders; unhandled in ABI 1, where such moves are always denied
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5: ioctl on character and block devices
# Network rights (LANDLOCK_ACCESS_NET_*), ABI 4
BIND_TCP = 1 << 0
CONNECT_TCP = 1 << 1
# Scopes (LANDLOCK_SCOPE_*), ABI 6: no connecting to abstract unix sockets, no signals, outside the domain
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

_WRITE_ABI1 = (
    WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK
) | MAKE_SYM


def write_rights(abi: int) -> int:
    """Every write-like right this ABI knows: what the sandbox handles, and grants beneath writable folders."""
    rights = _WRITE_ABI1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def handled_rights(abi: int) -> int:
    return write_rights(abi) | (IOCTL_DEV if abi >= 5 else 0)


class LandlockError(OSError):
    pass


# Bound at import, never between fork and exec: loading a library there could wait forever on a lock another
# thread of the parent held when it forked.
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.syscall.restype = ctypes.c_long
_MACHINE = platform.machine()


def _syscall(name: str, *args: object) -> int:
    if _MACHINE not in ("x86_64", "aarch64", "riscv64"):
        raise LandlockError(0, f"Landlock syscall numbers are not known for {_MACHINE}")
    result = _LIBC.syscall(ctypes.c_long(_SYSCALLS[name]), *args)
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"landlock_{name}: {os.strerror(err)}")
    return int(result)


def abi_version() -> int:
    """The kernel's Landlock ABI, 0 when it has none (not built in, disabled at boot, or another architecture)."""
    try:
        return _syscall("create_ruleset", None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError:
        return 0


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64)]


class _RulesetAttrScoped(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the UAPI: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def restrict_self(abi: int, grants: list[tuple[str, int]], *, deny_tcp: bool, scope: bool = True) -> None:
    """Confine this process and every child it will have: ``handled_rights(abi)`` only beneath ``grants`` (path,
    rights); TCP bind/connect denied when ``deny_tcp`` (ABI 4); signals and abstract sockets kept inside (ABI 6).
    A grant whose path does not exist is skipped. Raises LandlockError when the kernel refuses."""
    handled = handled_rights(abi)
    net = (BIND_TCP | CONNECT_TCP) if deny_tcp and abi >= 4 else 0
    attr: ctypes.Structure
    if abi >= 6 and scope:
        attr = _RulesetAttrScoped(handled, net, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    elif abi >= 4:
        attr = _RulesetAttr(handled, net)
    else:
        attr = _RulesetAttr(handled, 0)
    size = ctypes.sizeof(attr) if abi >= 4 else 8  # ABI 1-3 kernels know only handled_access_fs
    ruleset = _syscall("create_ruleset", ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        for path, rights in grants:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                # A file takes only file rights (the kernel refuses folder rights on it with EINVAL).
                allowed = rights & handled if os.path.isdir(path) else rights & handled & _FILE_RIGHTS
                if allowed:
                    rule = _PathBeneath(allowed, fd)
                    _syscall("add_rule", ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule), 0)
            finally:
                os.close(fd)
        if _LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        _syscall("restrict_self", ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
