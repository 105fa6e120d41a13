"""Generate ``protocol/schema.json``, the JSON Schema editor clients build against.

Run ``python -m protocol.schema`` after changing a type; ``tests/protocol/test_schema.py`` fails when the
committed file is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from protocol.editor import EditorCapabilities
from protocol.methods import METHODS, NOTIFICATIONS, SERVER_REQUESTS
from protocol.updates import InitializationOptions
from protocol.wire_text import wire_text

SCHEMA_PATH = Path(__file__).with_name("schema.json")


def build_schema() -> dict[str, Any]:
    """The whole contract as one JSON Schema document: ``methods`` maps each name to its params/result refs and its
    access and exclusivity (``protocol.methods.MethodSpec``),
    ``wireText`` the compaction text clients recognise (a JSON Schema tool ignores unknown keywords)."""
    types: list[type] = [InitializationOptions, EditorCapabilities]
    for spec in METHODS.values():
        types += [spec.params, spec.result]
    types += list(NOTIFICATIONS.values())
    for params, result in SERVER_REQUESTS.values():
        types += [params, result]
    refs, components = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    ref = dict(zip(types, refs))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Threadline wire protocol",
        "initializationOptions": ref[InitializationOptions],
        # initialize's capabilities.experimental.threadline.editor
        "clientCapabilities": {"editor": ref[EditorCapabilities]},
        "methods": {
            name: {
                "summary": spec.summary,
                "access": spec.access,  # "read": never writes; "mutate": may
                "exclusive": spec.exclusive,  # holds its session to itself (no turn runs meanwhile)
                "params": ref[spec.params],
                "result": ref[spec.result],
            }
            for name, spec in METHODS.items()
        },
        "notifications": {name: {"params": ref[t]} for name, t in NOTIFICATIONS.items()},
        "serverRequests": {name: {"params": ref[p], "result": ref[r]} for name, (p, r) in SERVER_REQUESTS.items()},
        "wireText": wire_text(),  # fixed text clients recognise compaction by (protocol/wire_text.py)
        "$defs": dict(sorted(components.items())),
    }


def render() -> str:
    return json.dumps(build_schema(), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def main() -> int:
    SCHEMA_PATH.write_text(render(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
