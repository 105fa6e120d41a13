"""Keys of config.toml that no table knows: each named once, in one line, with the nearest known key.

The lenient tables (the top level, ``[provider]``, ``[context]``) ignore an unknown key, so that a file another
version of Threadline wrote still loads; a typo there (``approval_polcy``, ``[context] threshold``) would then be
silently without effect. The strict tables refuse one (``server.config_file``) and name the nearest key too.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

_said: set[str] = set()  # warnings already given by this process (the settings may be loaded more than once)


def nearest(key: str, known: list[str]) -> str | None:
    """The known key ``key`` was most likely meant to be (difflib's closest match), if any is close."""
    found = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_keys(
    data: Mapping[str, Any], tables: Mapping[str, type[msgspec.Struct]], top: type[msgspec.Struct]
) -> list[str]:
    """``key (did you mean known?)`` for each key of ``data`` (the top level) and of each lenient table in
    ``tables`` that its struct does not have, as a dotted path."""
    found = []
    for prefix, struct, table in [("", top, data), *((f"{n}.", t, data.get(n)) for n, t in tables.items())]:
        if not isinstance(table, Mapping):
            continue
        known = [f.encode_name for f in msgspec.structs.fields(struct)]
        for key in table:
            if key not in known:
                guess = nearest(str(key), known)
                found.append(f"{prefix}{key}" + (f" (did you mean {prefix}{guess}?)" if guess else ""))
    return found


def warn_unknown(path: Path, keys: list[str], say: Callable[[str], None] | None = None) -> None:
    """One line per unknown key on stderr, once per process."""
    for key in keys:
        line = f"threadline: warning: {path}: unknown key {key}; it is ignored"
        if line not in _said:
            _said.add(line)
            (say or _stderr)(line)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
