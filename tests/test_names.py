"""One name per thing: no two classes in ``server/`` share a name, so a reader (or a grep) never meets two
``Session``s or three ``Answer``s and has to ask which one."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "server"


def test_no_two_classes_in_server_share_a_name():
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(SERVER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{path.relative_to(SERVER.parent)}:{node.lineno}")
    doubled = {name: places for name, places in where.items() if len(places) > 1}
    assert doubled == {}, doubled
