"""Keep provider keys out of the server's environment block, where anything it starts could read them.

Scrubbing ``os.environ`` is not enough: ``/proc/<pid>/environ`` shows the environment the process was started
with, and every command ``run_command`` runs can read its parent's (``cat /proc/$PPID/environ``). So when ``serve``
finds a secret in its environment, it re-executes itself (same pid, same arguments, same stdio) with the secrets
removed from the environment, handing them over a pipe that the new image reads once and closes.

The secrets are every variable the server reads a key from: the built-in key variables (``KEY_VARS``), whatever
``api_key_env`` names in ``config.toml`` (``[provider]``, each ``[models.NAME]`` and ``[web]`` with Brave search;
any name), and
``THREADLINE_BASE_URL`` when it carries a password (``http://user:PASS@host/v1``), and key-like variables that
config.toml's MCP servers name as ``${VAR}``. Any other variable holding the same value goes too. Children (commands, MCP servers, ``threadline acp``'s) inherit the cleaned block.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from server.config_file import BRAVE_KEY_ENV, ConfigError, home_folder, read_config
from server.security.key_handover import FD_VAR as _FD_VAR
from server.security.key_handover import KEY_VARS
from server.security.key_handover import hand_over as _hand_over

__all__ = ["KEY_VARS", "handed_over", "hide_in_place", "reexec_without_keys", "secret_vars", "take_keys"]

URL_VARS = ("THREADLINE_BASE_URL",)  # secret only when the URL has a password
# A ``${VAR}`` in config.toml's [mcp_servers] env/headers whose name says it holds a secret is read by the server
# (to start that MCP server) and is hidden too; ``${PATH}`` or ``${HOME}`` are not secrets and stay.
_KEY_LIKE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")
_handed: dict[str, str] = {}  # what ``take_keys`` read, for ``${VAR}`` in config.toml's MCP servers


def secret_vars(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` that hold a secret the server reads, with their values."""
    names = [*KEY_VARS, *configured_key_vars(environ)]
    found = {k: environ[k] for k in names if environ.get(k)}
    for name in URL_VARS:
        if environ.get(name) and _has_password(environ[name]):
            found[name] = environ[name]
    return found


def configured_key_vars(environ: Mapping[str, str]) -> list[str]:
    """What ``api_key_env`` names in ``config.toml`` (read leniently: a broken file is reported later, by
    ``load_settings``, and names nothing here)."""
    try:
        config = read_config(home_folder(environ) / "config.toml")
    except (ConfigError, OSError, ValueError):
        return []
    names = [config.provider.api_key_env, *(m.api_key_env for m in config.models.values())]
    if (environ.get("THREADLINE_WEB_SEARCH_PROVIDER") or config.web.search_provider) == "brave":
        names.append(config.web.api_key_env or BRAVE_KEY_ENV)  # web_search's key (server.tools.web.search)
    return [n for n in names if isinstance(n, str) and n] + _mcp_references(config.mcp_servers)


def _mcp_references(servers: object) -> list[str]:
    """Key-like variables named by ``${VAR}`` in ``[mcp_servers.NAME]`` env and headers."""
    found = []
    for table in servers.values() if isinstance(servers, dict) else ():
        for key in ("env", "headers"):
            pairs = table.get(key) if isinstance(table, dict) else None
            for value in pairs.values() if isinstance(pairs, dict) else ():
                found += [n for n in _REFERENCE.findall(str(value)) if _KEY_LIKE.search(n)]
    return found


def handed_over() -> dict[str, str]:
    """The secrets this image took from the one before it (for config.toml's ``${VAR}`` only)."""
    return dict(_handed)


def _has_password(url: str) -> bool:
    try:
        parts = urlsplit(url.strip())
        return bool(parts.password or parts.username)  # ``https://KEY@host``: a user name may be a token
    except ValueError:
        return "@" in url  # unparseable: hide it rather than guess


def reexec_without_keys() -> None:
    """Re-execute this process without its secrets (or any variable holding the same value) in its environment;
    returns only when there is nothing to hide, or after the re-exec (in the new image).

    A client that started this server may have handed the built-in keys over already (``server.security.key_handover``): then
    there is nothing left to hide and no second interpreter start. Whatever secret the environment still
    holds is hidden the same way, together with what was handed over."""
    found = secret_vars(os.environ)
    if not found:
        return  # keys a client handed over wait in their pipe for take_keys
    keys = {**take_keys(), **found}
    env, read_end = _hand_over(dict(os.environ), keys)
    if read_end is None:  # too many to hand over: they stay where the settings can read them
        os.environ.update(keys)
        return
    os.set_inheritable(read_end, True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def hide_in_place() -> bool:
    """Hide this process's secrets without re-executing it (``threadline exec``, whose process runs the server):
    their entries in the environment block it was started with, which is what ``/proc/<pid>/environ`` shows, are
    overwritten with zeros, and they leave ``os.environ``, kept for ``take_keys``. False, with nothing changed,
    when that block cannot be found or checked here: then ``reexec_without_keys``."""
    found = secret_vars(os.environ)
    if not found:
        return True
    if _FD_VAR in os.environ:  # an earlier image's keys wait in their pipe: the re-execution's way
        return False
    values = set(found.values())
    names = {k for k, v in os.environ.items() if k in found or v in values}
    try:
        import ctypes

        start, end = _environ_block()
        shown = Path("/proc/self/environ")
        if end <= start or ctypes.string_at(start, end - start) != shown.read_bytes():
            return False  # not the block the kernel shows
        at = start
        for entry in ctypes.string_at(start, end - start).split(b"\0"):
            key, _, value = entry.partition(b"=")
            if os.fsdecode(key) in names or os.fsdecode(value) in values:
                ctypes.memset(at, 0, len(entry))
            at += len(entry) + 1
        block = shown.read_bytes()
        if any(os.fsencode(v) in block for v in values) or any(os.fsencode(f"{n}=") in block for n in names):
            return False  # cannot happen; if it did, the re-execution hides them
    except (OSError, ValueError, IndexError):
        return False
    for name in names:
        os.environ.pop(name, None)
    _handed.update(found)
    return True


def _environ_block() -> tuple[int, int]:
    """Where the environment block the process was started with lies in its memory (``proc(5)``: the 50th and
    51st fields of ``/proc/self/stat``, ``env_start`` and ``env_end``)."""
    stat = Path("/proc/self/stat").read_bytes()
    fields = stat[stat.rindex(b")") + 2 :].split()  # after the command name, which may hold spaces: field 3 on
    return int(fields[47]), int(fields[48])


def take_keys() -> dict[str, str]:
    """The secrets the previous image handed over (read once; the pipe is closed) or ``hide_in_place`` kept, or
    {}."""
    fd = os.environ.pop(_FD_VAR, None)
    if fd is None:
        return dict(_handed)
    try:
        with os.fdopen(int(fd), "rb") as pipe:
            keys = json.loads(pipe.read() or b"{}")
    except (OSError, ValueError):
        return {}
    if not isinstance(keys, dict):
        return {}
    _handed.update({k: v for k, v in keys.items() if isinstance(k, str) and isinstance(v, str)})
    return dict(_handed)
