"""An HTML page as Markdown, converted in a process of its own with a depth and a time bound (SPEC B-WEB-2).

BeautifulSoup and markdownify are slow on some pages (quadratic in nesting depth; a flat 2 MB page takes tens of
seconds) and end in ``RecursionError`` on deep ones; on the event loop that froze every session and client of the
server. So the conversion runs in a short-lived Python process (``convert_worker``), the page on its stdin:
the event loop only waits for its answer. A page nested deeper than ``MAX_DEPTH`` is not parsed at all; a
conversion still running after ``CONVERT_SECONDS`` is killed (a thread could not be). In every such case, and when
the converter fails, the model reads the page's plain text (``plain``, linear, in a thread) under a first line
saying so. Nothing here raises for a page: what comes back is always a title and a text.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path

from server.sandbox.start import PIPE, start
from server.tools.web.plain import plain_text

MAX_DEPTH = 200  # elements inside elements: documentation pages stay well under 60
CONVERT_SECONDS = 20.0  # the wait for the converter; its own CPU limit is a little longer
WORKER = Path(__file__).with_name("convert_worker.py")
FALLBACK = "[web_fetch: this page is given as plain text, not Markdown: {why}]"


class _NotConverted(Exception):
    """Why the converter gave no Markdown."""


async def page_to_markdown(page: bytes, charset: str | None) -> tuple[str, str]:
    """The page's title and its content as Markdown, or as plain text under a line saying why."""
    try:
        return await _in_worker(page, charset)
    except _NotConverted as exc:
        why = str(exc)
    title, text = await asyncio.to_thread(plain_text, page, charset)
    return title, f"{FALLBACK.format(why=why)}\n\n{text}"


async def _in_worker(page: bytes, charset: str | None) -> tuple[str, str]:
    argv = [str(int(CONVERT_SECONDS) + 5), str(os.getpid())]
    try:
        # Our own code on a page: unconfined, and not in the server's PID namespace (it watches the server
        # itself, argv's last word); a session of its own, so a terminal's Ctrl-C is the server's to handle
        proc = await start(
            [
                sys.executable,
                "-E",  # no PYTHON* variables
                "-P",  # and not the worker's folder first on the path: its modules are loaded by path
                str(WORKER),
                charset or "",
                str(MAX_DEPTH),
                *argv,
            ],
            confine=None,
            contain=None,
            stdin=PIPE,
            env={"LC_ALL": "C.UTF-8"},
        )
    except OSError as exc:
        raise _NotConverted(f"the converter could not start ({exc})") from None
    try:
        async with asyncio.timeout(CONVERT_SECONDS):
            out, err = await proc.communicate(page)
    except TimeoutError:
        raise _NotConverted(f"converting it took longer than {CONVERT_SECONDS:g} s") from None
    finally:
        if proc.returncode is None:  # timed out, or the turn was cancelled
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    return await asyncio.to_thread(_answer, proc.returncode, out, err)  # megabytes of JSON: not on the loop


def _answer(code: int | None, out: bytes, err: bytes) -> tuple[str, str]:
    if code is not None and code < 0:
        raise _NotConverted(f"the converter was ended by signal {-code} (its CPU or memory limit)")
    if code != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {code}"]
        raise _NotConverted(f"the converter failed ({last[0][:200]})")
    try:
        answer = json.loads(out)
    except ValueError:
        raise _NotConverted("the converter's answer could not be read") from None
    if "fallback" in answer:
        raise _NotConverted(str(answer["fallback"]))
    return str(answer.get("title", "")), str(answer.get("text", ""))
