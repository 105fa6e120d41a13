"""Starting a server front end in this process (``threadline serve``, ``threadline acp``, and the in-process
server of ``threadline exec``): the one way the client package (``server.cli``) leads into the server.

The API keys leave the environment block first, logs go to stderr with secrets masked, then the settings are
loaded and the front end runs until its client leaves. What this module imports at its top is small, so that
``threadline exec`` can hide its keys before it imports the server.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from server.config_file import ConfigError
from server.security.secret_env import hide_in_place, reexec_without_keys, take_keys

if TYPE_CHECKING:
    from server.config import Settings
    from server.edge.local import Deliver, LocalServer


def serve(tcp: bool = False, port: int = 0, log_level: str = "WARNING") -> int:
    """The JSON-RPC server over stdio, or on 127.0.0.1 with ``tcp``."""

    def run(settings: Settings) -> int:
        if tcp:
            from server.edge.tcp import serve_tcp

            return serve_tcp(settings, port)
        from server.edge.stdio import serve_stdio

        return serve_stdio(settings)

    return _serve_with(log_level, run)


def serve_acp(log_level: str = "WARNING") -> int:
    """The Agent Client Protocol front end over stdio. ``initialize`` is answered from the start, while the agent
    loads (``server.acp_doorman``): a client waits for it before anything else."""
    from server.acp_doorman import Doorman

    reexec_without_keys()  # first: the doorman must live in the process that serves
    # Only protocol lines may reach the client: the real stdout is kept for them, and fd 1 (stray prints,
    # anything a child inherits) becomes stderr.
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    doorman = Doorman(0, out_fd)

    def run(settings: Settings) -> int:
        from server.acp import serve_acp as run_acp

        return run_acp(settings, doorman)

    return _serve_with(log_level, run)


def daemon(log_level: str = "WARNING") -> int:
    """``threadline daemon``: the per-user server on a unix socket under the home folder, in the foreground."""

    def run(settings: Settings) -> int:
        from server.edge.daemon import run_daemon

        return run_daemon(settings)

    return _serve_with(log_level, run)


def connect(start: bool = True) -> int:
    """``threadline connect``: stdio <-> the daemon's socket, starting the daemon when none listens. It reads no
    settings but the home folder: the daemon reads its own."""
    from server.config_file import home_folder
    from server.edge.connect import run_connect

    return run_connect(home_folder(os.environ).absolute(), start)


def daemon_listens() -> bool:
    """Whether a daemon answers on this home's socket (``sessions``, ``search`` and ``view`` read the store in
    their own process when none does; a bridge process only to learn that would cost an interpreter's start)."""
    from server.config_file import home_folder
    from server.edge.connect import connect_socket

    try:
        connect_socket(home_folder(os.environ).absolute(), start=False).close()
    except ConnectionError:
        return False
    return True


def _serve_with(log_level: str, run: Callable[[Settings], int]) -> int:
    from server.errors import StorageFailure

    reexec_without_keys()  # so no command can read the key from /proc/<server pid>/environ
    try:
        return run(_settings(log_level))
    except (ConfigError, StorageFailure) as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 2


def hide_keys() -> None:
    """``threadline exec``'s process runs the server, so no command it starts may read a key from its
    environment block (``/proc/<pid>/environ``): the keys' entries there are zeroed in place, or, where that
    cannot be done, the process re-executes itself without them as ``serve`` does (``server.security.secret_env``)."""
    if not hide_in_place():
        reexec_without_keys()


def _settings(log_level: str) -> Settings:
    """Logs to stderr with secrets masked, then the settings (``ConfigError``), their secrets masked too."""
    _without_httpx_cli()
    from server.config import load_settings
    from server.security import redaction

    logging.basicConfig(
        level=log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    redaction.install()
    settings = load_settings({**os.environ, **take_keys()})
    for key in settings.api_keys():
        redaction.add_secret(key)
    for provider in (settings.provider, *settings.models.values()):
        redaction.add_url_secrets(provider.base_url)
    return settings


def _without_httpx_cli() -> None:
    """httpx imports its command-line client (click, rich, pygments: some 30-40 ms, a third of its import) whenever
    those are installed, as they are here (rich for ``chat``); the server never calls it. A ``None`` in
    ``sys.modules`` makes that import fail, and httpx then defines a stub ``httpx.main`` instead (its own fallback
    for an install without them)."""
    if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
        sys.modules["httpx._main"] = None  # type: ignore[assignment]


def _prepare_store(path: Path) -> threading.Thread:
    """The store's file made and migrated in a thread (SQLite's work lets go of the GIL) while the caller imports
    the rest of the server; opening the store then finds it done, or meets its error again and says it."""
    from server.transcript.store import Store

    def prepare() -> None:
        with contextlib.suppress(Exception):
            Store.prepare(path)

    thread = threading.Thread(target=prepare, name="prepare-store", daemon=True)
    thread.start()
    return thread


async def open_in_process(deliver: Deliver, log_level: str = "WARNING") -> LocalServer | None:
    """The server of ``threadline exec`` in this process (``server.edge.local``), opened on the data folder, its
    logs on stderr as a server's; None when it cannot start, after saying why on stderr as ``serve`` does. The
    caller has called ``hide_keys`` first."""
    from server.errors import StorageFailure

    try:
        settings = _settings(log_level)
        preparing = _prepare_store(settings.database_path)
        from server.edge.local import LocalServer

        preparing.join()
        server = LocalServer(settings, deliver)
        await server.open()
        return server
    except (ConfigError, StorageFailure) as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return None


def sandbox_command(argv: list[str], mode: str | None = None) -> int:
    """``threadline sandbox -- CMD ARGS``: run one command in this folder under the configured sandbox (B-SBX-1),
    as ``run_command`` would, and exit with its status. Where the sandbox cannot be enforced it refuses to run
    (B-SBX-2: never silently unconfined) and says why; ``--mode off`` runs it plainly."""
    import shutil
    import tempfile

    from server.config import load_settings
    from server.sandbox.policy import build_policy
    from server.sandbox.runner import support
    from server.sandbox.start import Confine, start_blocking
    from server.tools.command import scrubbed_env

    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 2
    mode = mode or settings.sandbox.mode
    found = support()
    if mode != "off" and not found.enforced:
        print(f"threadline sandbox: cannot enforce the {mode} sandbox here: {found.reason}", file=sys.stderr)
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="threadline-sandbox-"))
    try:
        s = settings.sandbox
        policy = build_policy(
            mode, Path.cwd(), tmp, network=s.network, writable_roots=s.writable_roots, deny_read=s.deny_read
        ).with_nested_git()  # every .git below read-only, as for the agent's commands (B-SBX-4)
        env = scrubbed_env(settings.api_keys()) | ({"TMPDIR": str(tmp)} if mode != "off" else {})
        if mode != "off":
            env.pop("SSH_AUTH_SOCK", None)  # hidden inside (server.sandbox.policy.always_hidden)
        confine = Confine(policy, found.abi, found.namespaces) if mode != "off" else None
        try:
            proc = start_blocking(argv, confine=confine, env=env)  # the terminal's: its stdio and its Ctrl-C
        except OSError as exc:
            print(f"threadline sandbox: {argv[0]}: {exc.strerror}", file=sys.stderr)
            return 127
        try:
            code = proc.wait()
        except BaseException:  # as subprocess.run: a Ctrl-C (which the command got too) never leaves it running
            proc.kill()
            proc.wait()
            raise
        return code if code >= 0 else 128 - code
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
