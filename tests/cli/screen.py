"""``threadline chat`` in a real pseudo-terminal, its screen read by a headless terminal emulator (pyte).

The command's stdin, stdout and stderr are the terminal's slave side; everything it writes is fed to a pyte
screen tall enough that nothing scrolls away, and kept raw too (to look for what the screen hides).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyte

from tests.cli_support import THREADLINE
from tests.harness import REPO

COLUMNS, ROWS = 100, 200
WAIT = 90  # seconds: a generous bound for a loaded 2-core machine, never a timing assertion


class Terminal:
    def __init__(self, args: list[str], env: dict[str, str], cwd: Path = REPO):
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        self.lock = threading.Lock()
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
        self.proc = subprocess.Popen(
            [str(THREADLINE), *args],
            env={**env, "TERM": "xterm-256color"},
            cwd=cwd,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,  # the terminal becomes its controlling terminal, as a shell's would
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: the last writer closed the slave side
                return
            if not data:
                return
            with self.lock:
                self.raw += data
                self.stream.feed(data)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def text(self) -> str:
        with self.lock:
            return "\n".join(line.rstrip() for line in self.screen.display).rstrip()

    def wait_for(self, predicate: Callable[[str], object], what: str) -> object:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            found = predicate(self.text())
            if found:
                return found
            if self.proc.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"never saw {what}; the screen:\n{self.text()}")

    def wait_for_text(self, needle: str) -> None:
        self.wait_for(lambda screen: needle in screen, repr(needle))

    def numbers(self, pattern: str) -> list[int]:
        """The numbers ``pattern``'s group catches on the screen now."""
        return [int(n) for n in re.findall(pattern, self.text())]

    def cell(self, needle: str):
        """The first character cell of ``needle`` on the screen (its colour and attributes)."""
        with self.lock:
            for y in range(ROWS):
                line = "".join(self.screen.buffer[y][x].data for x in range(COLUMNS))
                x = line.find(needle)
                if x >= 0:
                    return self.screen.buffer[y][x]
        raise AssertionError(f"{needle!r} is not on the screen:\n{self.text()}")

    def close(self) -> int:
        try:
            self.type("\x04")  # Ctrl-D: the end of input ends the chat
            code = self.proc.wait(timeout=WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.reader.join(timeout=10)
            os.close(self.master)
        return code
