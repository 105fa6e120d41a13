"""Containment (B-PROC-1): every process a server starts lives in a PID namespace whose init dies with the server.

A process cannot leave its PID namespace (``setsid``, double forks, a scrubbed environment change nothing), and
when the namespace's init (its pid 1) ends, the kernel kills every process left in it. So a server starts one
*keeper*: a process that makes a new PID namespace (inside a new user namespace when it lacks CAP_SYS_ADMIN) and
forks that namespace's init, which reaps orphans and exits the moment the server process ends, however it ended
(it watches the server through a pidfd, so SIGKILL included). Each start then goes through the launcher
(``server.sandbox.launch``) with ``--join``: it enters that namespace, forks the command into it (confined first
when a sandbox policy is given), relays signals to it and exits with its status. Where the server forks the
process itself, ``Keeper.preexec`` does the same in the forked child at a launcher's fraction of the cost: the
process joins and stays outside, everything it starts is inside, and it gets SIGKILL when the server ends.

Why not a cgroup: cgroup v2 is writable only by root or inside a delegated systemd unit, and a cgroup outlives a
SIGKILLed server until someone kills it; a PID namespace needs neither (docs/RELIABILITY.md).

Stdlib only: the keeper and the launcher are fresh ``python -I -S`` interpreters.

Use (server side, one ``Keeper`` per server; ``server.tools.processes.ProcessGroups`` holds it)::

    keeper = Keeper.start()                   # None where no PID namespace can be made here
    argv = keeper.argv(["bash", "-c", cmd])   # start this instead of the command (any Popen / asyncio / SDK)
    argv = keeper.argv(cmd_argv, policy_json, namespaces=True)   # the same, confined by the sandbox first
    Popen(cmd_argv, preexec_fn=keeper.preexec(confine))          # where we fork: ~1 ms instead of ~25 ms
    keeper.stop()                             # kills every process ever started through it
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
JOIN_FAILED = 125
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.py")
_LIBC = ctypes.CDLL(None, use_errno=True)
RELAYED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


class Keeper:
    """A live keeper: ``init`` is its pid 1 (a pid of ours), ``pid_ns``/``user_ns`` the namespaces' inode numbers
    (``user_ns`` 0 when none was made), which the launcher checks before it joins."""

    def __init__(self, proc: subprocess.Popen[bytes], init: int, pid_ns: int, user_ns: int):
        self.proc, self.init, self.pid_ns, self.user_ns = proc, init, pid_ns, user_ns

    @classmethod
    def start(cls) -> Keeper | None:
        """A keeper for this process, or None when no PID namespace can be made here (then nothing is
        contained, and the process groups and ``TL_RUN_OWNER`` reaping are what is left)."""
        if not sys.platform.startswith("linux"):
            return None
        argv = [sys.executable, "-I", "-S", os.path.abspath(__file__), "keeper", str(os.getpid())]
        try:
            # in a session of its own, as every command: a terminal's Ctrl-C to ``threadline exec`` (whose process
            # runs the server) is the server's to handle, never the keeper's
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env={},  # the namespace's init is in every command's PID namespace: none of the server's environment
            )
        except OSError:
            return None
        assert proc.stdout is not None
        line = proc.stdout.readline().decode(errors="replace").split()
        proc.stdout.close()
        if len(line) != 3 or not all(part.isdigit() for part in line):
            proc.wait()
            return None
        return cls(proc, *(int(part) for part in line))

    @property
    def spec(self) -> str:
        return f"{self.init}:{self.pid_ns}:{self.user_ns}"

    def argv(self, argv: list[str], policy_json: str | None = None, namespaces: bool = True) -> list[str]:
        """``argv`` started inside the keeper's namespace (and under the sandbox ``policy_json``, when given)."""
        sandbox = [policy_json, "1" if namespaces else "0"] if policy_json is not None else ["-", "0"]
        return [sys.executable, "-I", "-S", LAUNCHER, "--join", self.spec, *sandbox, "--", *argv]

    def preexec(self, then: Callable[[], None] | None = None) -> Callable[[], None]:
        """A ``preexec_fn`` (the fast way, no launcher): the started process joins the namespace, so everything it
        starts is born inside; it stays outside itself (it forked before joining), so it gets SIGKILL when the
        thread that started it ends (``PR_SET_PDEATHSIG``): start it from the event loop's thread, which lives
        as long as the server. ``then`` (the sandbox's ``runner.preexec``) runs after the join. Like that one,
        this runs only code bound before the fork."""
        server, spec = os.getpid(), self.spec

        def join_then() -> None:
            try:
                join(spec)
            except BaseException as exc:  # noqa: BLE001 - never start uncontained: say why, and stop
                os.write(2, f"threadline: could not start the command in the server's namespace: {exc}\n".encode())
                os._exit(JOIN_FAILED)
            # After joining (a credential change may reset it), and checked: the server may have ended since the fork
            if _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != server:
                os._exit(JOIN_FAILED)
            # The joined process itself cannot start threads (clone(CLONE_THREAD) fails while its children's PID
            # namespace differs from its own): node, a JVM, a threaded Python would die. So it forks once more;
            # the child, born inside, is confined (``then``) and goes on to exec the command, and this process, a
            # copy of the server's memory, only relays and ends with it, outside the command's sandbox (B-SBX-5)
            relay_from_here(then)

        return join_then

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        """SIGKILL the namespace's init: the kernel then kills every process in it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.init, signal.SIGKILL)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def keeper_main(server: int) -> int:
    """The keeper: a PID namespace whose init ends with ``server``; prints ``INIT PIDNS USERNS`` once."""
    watch = os.pidfd_open(server)
    if os.getppid() != server:  # the server ended before we could watch it
        return 1
    uid, gid = os.getuid(), os.getgid()
    user_ns = False
    if _LIBC.unshare(CLONE_NEWPID) != 0:
        _check(_LIBC.unshare(CLONE_NEWUSER | CLONE_NEWPID), "unshare")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        user_ns = True
    init = os.fork()
    if init == 0:
        _init(watch)
    os.close(watch)
    pid_ns = os.stat(f"/proc/{init}/ns/pid").st_ino
    user_ino = os.stat(f"/proc/{init}/ns/user").st_ino if user_ns else 0
    os.write(1, f"{init} {pid_ns} {user_ino}\n".encode())
    os.close(1)
    os.waitpid(init, 0)
    return 0


def _init(watch: int) -> None:
    """Pid 1 of the namespace: reap whatever is left to it; end when the server does (the kernel then kills the
    rest). Signals from inside the namespace reach it only where it has a handler: SIGCHLD only, which wakes it."""
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    poller = select.poll()
    poller.register(watch, select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    while True:
        _reap_all()
        for fd, _ in poller.poll():
            if fd == watch:
                os._exit(0)
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)


def _reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def join(spec: str) -> None:
    """Enter the keeper's namespaces (``INIT:PIDNS:USERNS``), checked by inode so a reused pid is never joined.
    Only this process's children are born inside: the caller forks next (``run_inside``)."""
    init, pid_ns, user_ns = (int(part) for part in spec.split(":"))
    fds = []
    try:
        for kind, ino, flag in (("user", user_ns, CLONE_NEWUSER), ("pid", pid_ns, CLONE_NEWPID)):
            if kind == "user" and ino == 0:
                continue
            fd = os.open(f"/proc/{init}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
            fds.append(fd)
            if os.fstat(fd).st_ino != ino:
                raise OSError(0, "the server's process namespace is gone")
            _check(_LIBC.setns(fd, flag), f"setns {kind}")
    finally:
        for fd in fds:
            os.close(fd)


def run_inside(start: Callable[[], int]) -> int:
    """Fork; the child calls ``start()`` (which execs and never returns); this process relays signals to it and
    returns its exit status (a signal as 128+N, after re-raising it on ourselves where it is fatal)."""
    child = os.fork()
    if child == 0:
        code = 127
        try:
            code = start()  # execs; returns only when the start failed
        finally:
            os._exit(code)
    for relayed in RELAYED:
        signal.signal(relayed, lambda n, _f: _relay(child, n))
    _let_go_of_streams()  # hold no stream the caller reads to its end: once the command is done, so are we
    return _ended_as(child)


def relay_from_here(confine: Callable[[], None] | None = None) -> None:
    """In a ``preexec_fn`` after ``join``: fork; the child is confined (``confine``, the sandbox's
    ``runner.preexec``) and returns (and the caller's exec goes on, inside the namespace, as the command); this
    process becomes a relay that never returns: it holds no descriptor of the caller's (so the starter's pipes end
    with the command, and its exec-error pipe closes at the child's exec), passes on the signals it gets and exits
    with the child's status, as ``run_inside`` does.

    The relay never execs, so it keeps a copy of the server's memory: the keys, and under the daemon every
    session's text (B-SBX-5). So it stays outside everything the command is put in (its Landlock domain, its
    user, mount and network namespaces), and it is not dumpable from its first instruction on (it is made so
    before the fork; the child takes dumpable back before it confines itself, and its exec would anyway): a
    confined command cannot read ``/proc/<relay>/mem`` or ``environ``, as a user or as root. Landlock refuses a
    domain's process access to any process outside it; non-dumpable refuses anyone without ``CAP_SYS_PTRACE`` in
    the server's user namespace, which a command in its own user namespace never has."""
    me = os.getpid()
    _LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    child = os.fork()
    if child == 0:
        # Dumpable again (the command is the user's to debug; the sandbox writes its own /proc/self/uid_map, which
        # a non-dumpable process may not), then confined: the sandbox is the child's alone
        _LIBC.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        if confine is not None:
            confine()  # exits with the sandbox's SETUP_FAILED status when it cannot confine
        # After the sandbox's namespaces (a credential change resets it). The relay's end is the command's: SIGKILL
        # when it goes (it goes only when killed or the command ended). The relay is outside this namespace, so
        # getppid() says 0 while it lives, 1 (the init) once it is gone
        if _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() not in (0, me):
            os._exit(JOIN_FAILED)
        return
    with contextlib.suppress(ValueError, OSError):  # the starter's wakeup fd is not ours to write
        signal.set_wakeup_fd(-1)
    for relayed in RELAYED:
        with contextlib.suppress(ValueError, OSError):  # off the main thread: default dispositions remain
            signal.signal(relayed, lambda n, _f: _relay(child, n))
    _let_go_of_streams()
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2:
            with contextlib.suppress(OSError):
                os.close(int(name))
    os._exit(_ended_as(child))


def _let_go_of_streams() -> None:
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)


def _ended_as(child: int) -> int:
    """Wait for ``child`` and end as it did: its exit status, or its fatal signal raised on this process (128+N
    where that returns at all)."""
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        fatal = os.WTERMSIG(status)
        with contextlib.suppress(ValueError, OSError):  # off the main thread: the default disposition remains
            signal.signal(signal.Signals(fatal), signal.SIG_DFL)
        os.kill(os.getpid(), fatal)
        return 128 + fatal
    return os.WEXITSTATUS(status)


def _relay(child: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(child, sig)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "keeper":
        try:
            sys.exit(keeper_main(int(sys.argv[2])))
        except OSError as exc:
            print(f"threadline keeper: {exc}", file=sys.stderr)
            sys.exit(JOIN_FAILED)
    print("usage: contain.py keeper SERVER_PID", file=sys.stderr)
    sys.exit(2)
