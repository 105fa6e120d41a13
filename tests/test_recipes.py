"""The extension points are data, and the four recipes in docs/ARCHITECTURE.md ("Recipes") are true.

- a tool declares its facts once (``protocol.tool_facts``): every built-in tool has a row, every row a tool, the
  facts agree with what the tool itself says (its approval, its written paths), and the modules that used to keep
  their own tables of tool names read the facts instead (no tool name left in them but where one reads that tool's
  own arguments);
- a provider kind is one row (``server.providers.kinds``) that config, the wire's ``ProviderKind`` and the test
  doubles agree on;
- every wire method has its row, its handler module named after it and its import (what "Add a method" lists);
- each recipe names files that exist and a test that exists.
"""

from __future__ import annotations

import ast
import asyncio
import re
import sys
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest

from protocol import METHODS
from protocol.tool_facts import PLAIN, TOOL_FACTS, WRITTEN_PATH_KEYS, facts_of
from protocol.updates import ProviderKind
from server import config
from server.cli.client import Client
from server.providers.kinds import PROVIDER_KINDS
from server.tools import TOOLS
from server.tools.web.tools import SEARCH_TOOL
from tests.e2e.agent_support import Agent, kind_of, model_requests, tool_messages
from tests.fakes.fake_provider import FakeProvider
from tests.harness import API_KEY, LIMIT, REPO, initialize, log_path, server_env, watch_log
from tests.harness import KINDS as DOUBLES

ROOT = Path(__file__).resolve().parent.parent
# Offered per session but defined by the server (server.services.subagents; web_search with a search provider)
SESSION_TOOLS = {"task", "web_search"}
OURS = {**TOOLS, SEARCH_TOOL.name: SEARCH_TOOL}
# Where a tool's facts are read instead of a table of names, and the names still spelled there because the code
# reads that one tool's own arguments (how an approval shows an edit, how ACP shows a diff).
READ_FROM_FACTS = {
    "server/agent/approvals.py": {"edit_file", "write_file"},
    "server/agent/remembered.py": set(),
    "server/agent/calls.py": set(),
    "server/security/approval_rules.py": set(),
    "server/context/failures.py": set(),
    "server/context/processes.py": set(),
    "server/context/summary_state.py": set(),
    "server/acp/tools.py": {"edit_file", "write_file", "task"},
    "server/agent/batches.py": {"task"},  # where the subagent tool's name is defined
}


def test_every_built_in_tool_declares_its_facts_and_every_declaration_names_a_tool():
    assert sorted(set(TOOLS) - set(TOOL_FACTS)) == [], "add a row to protocol/tool_facts.py TOOL_FACTS"
    assert sorted(set(TOOL_FACTS) - set(TOOLS) - SESSION_TOOLS) == []
    assert all(tool.facts is TOOL_FACTS[name] for name, tool in OURS.items())
    assert facts_of("mcp__some_server__some_tool") is PLAIN


@pytest.mark.parametrize("name", sorted(OURS))
def test_a_tools_facts_agree_with_its_approval_and_its_arguments(name):
    tool, facts = OURS[name], TOOL_FACTS[name]
    properties = set(tool.parameters.get("properties", {}))
    assert set(tool.writes_paths) <= set(WRITTEN_PATH_KEYS) & properties
    if tool.approval == "edit":
        assert facts.kind == "write"
    if tool.approval == "fetch":
        assert (facts.kind, facts.grant) == ("network", "host")
    if facts.sandboxed or facts.grant == "command":
        assert tool.approval == "command" and "command" in properties
    if facts.kind == "write":
        assert tool.approval == "edit"
    if facts.background:
        assert facts.result == "process" and "background" in properties


def _tool_names_in(path: Path) -> set[str]:
    names = set(TOOL_FACTS)
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    }


@pytest.mark.parametrize("module", sorted(READ_FROM_FACTS))
def test_no_table_of_tool_names_is_left_where_the_facts_are_read(module):
    assert _tool_names_in(ROOT / module) == READ_FROM_FACTS[module]


def test_every_provider_kind_is_one_row_that_config_the_wire_and_the_doubles_agree_on():
    assert set(PROVIDER_KINDS) == set(config.PROVIDER_KINDS) == set(get_args(ProviderKind)) == set(DOUBLES)
    assert {
        name: kind.default_base_url for name, kind in PROVIDER_KINDS.items() if kind.default_base_url
    } == config.DEFAULT_BASE_URLS


@pytest.mark.parametrize("name", sorted(PROVIDER_KINDS))
async def test_each_provider_kinds_row_builds_its_client(name):
    provider: Any = PROVIDER_KINDS[name].build("http://127.0.0.1:9/v1", "sk-x", "some-model", 5.0, 100, None)
    try:
        assert getattr(provider, "kind", "openai") == name
    finally:
        await provider.aclose()


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_every_method_has_its_row_its_handler_module_and_its_import():
    """What "Add a method" lists: the row in protocol/methods.py, server/methods/<snake_name>.py registering the
    name, its import in server/methods/__init__.py (a forgotten import leaves a row with no handler)."""
    import server.methods
    from server.methods.registry import HANDLERS

    assert set(HANDLERS) == set(METHODS)
    imported = (ROOT / "server/methods/__init__.py").read_text(encoding="utf-8")
    for name, spec in METHODS.items():
        module = ROOT / "server/methods" / f"{_snake(name)}.py"
        assert module.exists(), f"{name}: no {module.relative_to(ROOT)}"
        assert f'("{name}"' in module.read_text(encoding="utf-8"), f"{name} is not registered in its module"
        assert re.search(rf"^\s+{_snake(name)},$", imported, re.M), f"{name}: not imported in server/methods"
        assert issubclass(spec.params, msgspec.Struct) and issubclass(spec.result, msgspec.Struct)
    assert server.methods.__doc__


RECIPES = ("Add a tool", "Add a method", "Add a provider kind", "Add a front end")
PROOF = re.compile(r"Proved by: `(tests/[\w/]+\.py)::(test_\w+)`")


def _recipe(title: str) -> str:
    text = (ROOT / "docs/ARCHITECTURE.md").read_text(encoding="utf-8")
    start = text.index(f"### {title}\n")
    end = text.find("\n#", start + 4)
    return text[start : end if end != -1 else len(text)]


@pytest.mark.parametrize("title", RECIPES)
def test_each_recipe_names_files_that_exist_and_a_test_that_proves_it(title):
    recipe = _recipe(title)
    paths = re.findall(r"`((?:server|protocol|tests|editors)/[\w/.<>-]*)`", recipe)
    assert paths, f"{title}: no files listed"
    for path in paths:
        if "<" not in path:  # server/methods/<name>.py: a file the recipe creates
            assert (ROOT / path).exists(), f"{title}: {path} does not exist"
    proofs = PROOF.findall(recipe)
    assert proofs, f"{title}: no 'Proved by: `tests/...::test_...`'"
    for file, test in proofs:
        tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        assert test in defined, f"{title}: {file} has no {test}"


@pytest.mark.slow  # a real server and a model double: ~7 s
async def test_a_tool_added_as_the_recipe_says_is_offered_and_run_through_the_real_server(tmp_path):
    """ "Add a tool", followed once: ``tests/recipe_server.py`` lists a tool in ``server.tools.TOOLS`` and runs the
    real server; the scripted model sees it offered, calls it, and reads its result. A tool with no row in
    ``protocol/tool_facts.py`` has the plain facts: it asks nothing, and nothing else needs its name."""
    home, folder = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    folder.mkdir()
    with FakeProvider(api_key=API_KEY) as fake, open(log_path(home), "ab") as err:
        env = server_env(home, fake.url, THREADLINE_PROVIDER=kind_of(fake))
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.recipe_server",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            env=env,
            cwd=str(REPO),
            limit=LIMIT,
        )
        watch_log(log_path(home), lambda: proc.returncode is None)
        agent = Agent(await initialize(Client(proc)), fake, home, log_path(home))
        try:
            fake.push(
                {"tool_calls": [{"id": "call_1", "name": "count_words", "arguments": {"text": "one two three"}}]},
                {"content": "Three."},
            )
            sid = await agent.session(folder)
            result = await agent.turn(sid, "count them", timeout=60)
        finally:
            await agent.close()
    assert result["stopReason"] == "endTurn", result
    requests = model_requests(fake)
    offered = [t["function"]["name"] for t in requests[0]["body"]["tools"]]
    assert "count_words" in offered and "read_file" in offered
    assert [m["content"] for m in tool_messages(requests[1])] == ["3 words"]
    assert agent.approvals == []  # plain facts, no approval declared: it runs unasked under the ask policy
