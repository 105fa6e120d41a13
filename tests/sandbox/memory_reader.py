"""The fourth review's attack (B-SBX-5), run as a confined command: read the memory of every process it can reach.

``python -I tests/sandbox/memory_reader.py`` walks its ancestors through ``/proc/<pid>/stat`` (the relay, the
server, the editor or exec process, up to pid 1) and then every other process in ``/proc``, reads each readable
region of ``/proc/<pid>/mem`` (as ``/proc/<pid>/maps`` lists them) and ``environ``, and prints one line per process:

    SELF <pid> ANCESTORS <pid> <pid> ...
    READ self|ancestor|other <pid> <bytes> clean|FOUND [what it found]
    DENIED <pid> <errno>            (an ancestor it could not read)

What it looks for is a shape, never a value (the test's secrets are random): a provider key ``sk-bsbx5-`` and a
conversation's ``PRIVATE-NOTE-``, each followed by 32 hex digits. Its own memory holds a control string made at
run time: ``CONTROL`` in its ``self`` line proves the reading works here.
"""

from __future__ import annotations

import os
import re

PATTERNS = (re.compile(rb"sk-bsbx5-[0-9a-f]{32}"), re.compile(rb"PRIVATE-NOTE-[0-9a-f]{32}"))
CONTROL = ("CONTROL-" + "7" * 12).encode()
SKIPPED = ("[vvar]", "[vsyscall]", "[vvar_vclock]")
LIMIT = 1 << 30  # bytes read from one process


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return int(fh.read().rsplit(b")", 1)[1].split()[1])


def ancestors(me: int) -> list[int]:
    chain, pid = [], me
    while pid > 1:
        try:
            pid = parent(pid)
        except OSError:
            break
        if pid > 0:
            chain.append(pid)
    return chain


def scan(data: bytes, found: set[str]) -> None:
    for pattern in PATTERNS:
        found.update(m.group().decode() for m in pattern.finditer(data))
    if CONTROL in data:
        found.add("CONTROL")


def read(pid: int) -> tuple[set[str], int]:
    """What ``pid``'s memory and environment hold; OSError when they cannot be read."""
    found: set[str] = set()
    with open(f"/proc/{pid}/maps") as fh:
        regions = [line.split() for line in fh]
    total = 0
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for region in regions:
            if not region[1].startswith("r") or (len(region) > 5 and region[5] in SKIPPED):
                continue
            low, high = (int(x, 16) for x in region[0].split("-"))
            try:
                mem.seek(low)
                data = mem.read(min(high - low, LIMIT - total))
            except (OSError, OverflowError, ValueError):
                continue
            total += len(data or b"")
            scan(data or b"", found)
            if total >= LIMIT:
                break
    with open(f"/proc/{pid}/environ", "rb") as fh:
        scan(fh.read(), found)
    return found, total


def main() -> None:
    me = int(os.readlink("/proc/self"))  # the host's pid (this /proc is the host's), not the namespace's
    chain = ancestors(me)
    others = sorted(int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in (me, *chain))
    print("SELF", me, "ANCESTORS", *chain, flush=True)
    for pid in (me, *chain, *others):
        try:
            found, total = read(pid)
        except OSError as exc:
            if pid in chain:
                print("DENIED", pid, exc.errno)
            continue
        where = "self" if pid == me else "ancestor" if pid in chain else "other"
        secret = found - {"CONTROL"}
        print("READ", where, pid, total, "FOUND" if secret else "clean", *sorted(found), flush=True)


if __name__ == "__main__":
    main()
