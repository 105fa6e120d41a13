"""A warm parent for pattern workers: started once per server, it forks one worker per job.

A fresh Python process per search cost ~0.3 s (interpreter start and imports); a fork of this already-started
process costs a few milliseconds, and each job still runs in its own process that can be killed at its deadline
(``server.patterns.run``). The server talks to it over one ``SOCK_SEQPACKET`` socket: ``{"job": n}`` with two
file descriptors attached (the job's input pipe and its output pipe), or ``{"kill": n}``. The worker reads its
job from the first and streams its answer to the second, exactly as a spawned ``server.patterns.worker`` does.

It dies with its server (``PR_SET_PDEATHSIG``, and the socket's end of file), and its workers die with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

from server.patterns import worker

_children: dict[int, int] = {}  # job number -> pid, until reaped


def _reap() -> None:
    """Collect finished workers. Only here, between messages: a pid stays in ``_children`` until reaped, so a
    ``kill`` can never reach a process that reused the pid of a finished worker."""
    while _children:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        for job, child in list(_children.items()):
            if child == pid:
                del _children[job]


def _run_job(control: socket.socket, parent: int, job_in: int, job_out: int) -> None:
    """In the forked child: become a worker on the two pipes, then exit."""
    code = 1
    try:
        control.close()
        worker.die_with_parent(parent)
        os.dup2(job_in, 0)
        os.dup2(job_out, 1)
        os.close(job_in)
        os.close(job_out)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 -- the process ends right after
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        code = worker.run_job()
        sys.stdout.flush()
    finally:
        os._exit(code)


def serve(control: socket.socket) -> None:
    me = os.getpid()
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(control, 4096, 2)
        except InterruptedError:
            continue
        if not data:
            break  # the server closed its end: it is gone or exiting
        message = json.loads(data)
        if "job" in message and len(fds) == 2:
            pid = os.fork()
            if pid == 0:
                _run_job(control, me, *fds)
            _children[int(message["job"])] = pid
        elif "kill" in message and int(message["kill"]) in _children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(_children[int(message["kill"])], signal.SIGKILL)
        for fd in fds:
            os.close(fd)
        _reap()
    for pid in list(_children.values()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def main() -> int:
    parent, fd = int(sys.argv[1]), int(sys.argv[2])
    worker.die_with_parent(parent)
    serve(socket.socket(fileno=fd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
