"""The docs are true to the code: every class member, function, module and path that docs/*.md, README.md and
protocol/README.md cite in backticks exists (read with ``ast``, nothing imported), so a rename that forgets a doc
fails here instead of leaving the docs pointing at code that moved."""

from __future__ import annotations

import ast
import builtins
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "protocol" / "README.md"]
CODE = ("server", "protocol", "bench")
# What a ``Name.word`` in backticks may be besides a class member: a file name (``AGENTS.md``)
FILE_SUFFIXES = {"md", "py", "toml", "json", "txt", "db", "sock", "yml", "yaml", "lua", "ts", "js", "mjs", "sh"}

CLASS_MEMBER = re.compile(r"`([A-Z][A-Za-z0-9]*)\.([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?`")
CALL = re.compile(r"`([a-z_][a-z0-9_]*)\(\)`")
PACKAGES = sorted(p.name for p in (ROOT / "server").iterdir() if (p / "__init__.py").exists())
# ``server.x.y`` and ``protocol.x``, and ``services.turns.submit_turn`` (a server package named without ``server.``)
DOTTED = re.compile(r"`((?:server|protocol|" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?`")
PATH = re.compile(r"`((?:server|protocol|tests|bench|editors)/[A-Za-z0-9_./-]*)`")


def _modules() -> dict[str, ast.Module]:
    trees = {}
    for top in CODE:
        for path in (ROOT / top).rglob("*.py"):
            trees[".".join(path.relative_to(ROOT).with_suffix("").parts)] = ast.parse(path.read_text())
    return trees


MODULES = _modules()


def _names_in(body: list[ast.stmt]) -> set[str]:
    """What a module or class body defines: functions, classes, assigned and annotated names, imports."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try)):
            names |= _names_in(node.body)
    return names


def _members() -> dict[str, set[str]]:
    """Every class name in the code, with the members any class of that name has (``self.x = ...`` included)."""
    members: dict[str, set[str]] = defaultdict(set)
    for tree in MODULES.values():
        for cls in ast.walk(tree):
            if not isinstance(cls, ast.ClassDef):
                continue
            found = members[cls.name] | _names_in(cls.body)
            for node in ast.walk(cls):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                    found.add(node.attr)
            members[cls.name] = found
    return members


def _functions() -> set[str]:
    return {
        node.name
        for tree in MODULES.values()
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def _cited(pattern: re.Pattern[str]) -> list[tuple[str, tuple[str, ...]]]:
    return [(doc.name, m.groups()) for doc in DOCS for m in pattern.finditer(doc.read_text())]


def test_every_cited_class_member_exists():
    members = _members()
    missing = [
        f"{doc}: {cls}.{attr}"
        for doc, (cls, attr) in _cited(CLASS_MEMBER)
        if attr not in FILE_SUFFIXES and attr not in members.get(cls, set())
    ]
    assert not missing, f"the docs cite class members that do not exist: {missing}"


def test_every_cited_function_exists():
    functions = _functions()
    missing = [
        f"{doc}: {name}()" for doc, (name,) in _cited(CALL) if name not in functions and not hasattr(builtins, name)
    ]
    assert not missing, f"the docs cite functions that do not exist: {missing}"


def test_every_cited_module_and_name_exists():
    missing = []
    for doc, (dotted,) in _cited(DOTTED):
        parts = dotted.split(".")
        if parts[-1] in FILE_SUFFIXES:
            continue  # a file name (``mcp.py``), which PATH checks when it is a path
        if parts[0] in PACKAGES:
            parts.insert(0, "server")
        # the longest prefix that is a module; what follows is a name in it (and a member of that name)
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            tree = MODULES.get(module) or MODULES.get(module + ".__init__")
            if tree is not None:
                break
        rest = parts[cut:]
        if tree is None or (rest and rest[0] not in _names_in(tree.body) and module + "." + rest[0] not in MODULES):
            missing.append(f"{doc}: {dotted}")
    assert not missing, f"the docs cite modules or names that do not exist: {missing}"


def test_every_cited_path_exists():
    missing = [f"{doc}: {path}" for doc, (path,) in _cited(PATH) if "*" not in path and not (ROOT / path).exists()]
    assert not missing, f"the docs cite paths that do not exist: {missing}"
