"""Every property test holds on a loaded machine (issue 50): it is bounded by its number of examples, which it
states, and has no deadline, so no example fails for taking long; its generated inputs are bounded by the
strategies themselves (sizes stated in each test)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MOST = 150  # examples a property test may ask for


def _property_modules() -> list[str]:
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if "node_modules" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.ImportFrom) and n.module == "hypothesis" for n in ast.walk(tree)):
            found.append(".".join(path.relative_to(TESTS.parent).with_suffix("").parts))
    return found


def test_every_property_test_states_a_bounded_example_count_and_no_deadline():
    checked = []
    for name in _property_modules():
        module = importlib.import_module(name)
        for attr, fn in vars(module).items():
            if not getattr(fn, "is_hypothesis_test", False):
                continue
            chosen = fn._hypothesis_internal_use_settings
            assert chosen.deadline is None, f"{name}.{attr} has a deadline: an example on a loaded machine fails it"
            assert chosen.max_examples <= MOST, f"{name}.{attr} asks for {chosen.max_examples} examples"
            stated = getattr(fn, "_hypothesis_internal_settings_applied", False)
            assert stated, f"{name}.{attr} does not state its max_examples (@settings)"
            checked.append(f"{name}.{attr}")
    assert len(checked) >= 10, checked  # the property tests were found
