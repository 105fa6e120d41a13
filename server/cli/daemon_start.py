"""Before a client of the daemon starts one: is the configuration it would read sound? A daemon that cannot start
because of ``config.toml`` is said once, in one line naming the file and line, by the client that asked, instead
of a bridge restarting it for a minute (docs/DAEMON.md). Shared by ``exec --detach``, ``chat --attach`` and the
commands that read the store through a server (``sessions``, ``search``, ``view``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def config_problem(env: dict[str, str] | None = None) -> str | None:
    """What is wrong with the settings a server started now would read (``config.toml``, the environment), in one
    line; None when they load."""
    from server.config import load_settings
    from server.config_file import ConfigError

    try:
        load_settings(dict(os.environ if env is None else env))
    except ConfigError as exc:
        return str(exc)
    return None


def home() -> Path:
    from server.config_file import home_folder

    return home_folder(os.environ).absolute()


def daemon_listening(at: Path | None = None) -> bool:
    """A daemon answers on this home's socket now (nothing is started)."""
    from server.edge.connect import connect_socket

    try:
        connect_socket(at or home(), start=False).close()
    except ConnectionError:
        return False
    return True


def refuse_bad_config(prefix: str = "threadline") -> bool:
    """Say the configuration's problem on stderr (one line) and answer True when a server cannot start on it."""
    problem = config_problem()
    if problem is None:
        return False
    print(f"{prefix}: {problem}", file=sys.stderr)
    return True


def unreachable(exc: BaseException) -> str:
    """The daemon could not be reached or started: one line, its reason when the bridge said one."""
    said = str(exc)
    if said and said != "the server closed the connection":
        return said
    log = home() / "logs" / "daemon.log"
    return f"the Threadline daemon could not be reached ({exc}); its reason is at the end of {log}"
