"""The converter's process: ``python -E -P convert_worker.py CHARSET MAX_DEPTH CPU_SECONDS SERVER_PID``, the page on
stdin, one JSON object on stdout (SPEC B-WEB-2, started by ``convert``).

``{"title", "text"}`` is the page as Markdown (``markdown.html_to_markdown``); ``{"fallback": why}`` says it was
not converted (nested deeper than ``MAX_DEPTH``, or the converter failed on it) and the server reads it as plain
text instead. The process bounds itself as well as being bounded: it dies with the server (``PR_SET_PDEATHSIG``)
and after ``CPU_SECONDS`` of CPU (``RLIMIT_CPU``), whatever the server does. It loads ``markdown.py`` and
``plain.py`` by their paths: importing them as ``server.tools.web`` would run the whole tools package first.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import resource
import sys
from types import ModuleType

HERE = os.path.dirname(os.path.abspath(__file__))
PR_SET_PDEATHSIG = 1
MEMORY_BYTES = 3 * 1024**3  # address space: a 10 MB page parses in far less


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_threadline_web_{name}", os.path.join(HERE, f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bound(cpu_seconds: int, server: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)  # SIGKILL with the server
        if os.getppid() != server:  # the server ended before that took hold
            sys.exit(1)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    with contextlib.suppress(ValueError, OSError):  # a lower hard limit already: that one holds
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def convert(page: bytes, charset: str | None, max_depth: int) -> dict[str, str]:
    depth = _load("plain").nesting_depth(page)
    if depth > max_depth:
        return {"fallback": f"its elements nest {depth} deep, over the {max_depth} a conversion takes"}
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20 * max_depth))
    try:
        title, text = _load("markdown").html_to_markdown(page, charset)
    except (RecursionError, MemoryError) as exc:
        return {"fallback": f"the converter could not hold it ({type(exc).__name__})"}
    except Exception as exc:  # noqa: BLE001 - a page the converter fails on is read as plain text
        return {"fallback": f"the converter failed on it ({type(exc).__name__}: {str(exc)[:200]})"}
    return {"title": title, "text": text}


def main(argv: list[str]) -> int:
    charset, max_depth, cpu_seconds, server = argv[0] or None, int(argv[1]), int(argv[2]), int(argv[3])
    _bound(cpu_seconds, server)
    page = sys.stdin.buffer.read()
    answer = convert(page, charset, max_depth)
    sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8", errors="replace"))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
