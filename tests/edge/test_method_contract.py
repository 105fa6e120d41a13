"""The method contract lives in ``protocol/methods.py`` (issue 53): each row declares its access and whether it holds
its session exclusively; the schema clients read carries both; the server's handler table agrees with the rows, one
handler a row and no handler without one."""

from __future__ import annotations

import json

import pytest

import server.methods  # noqa: F401  (registers every handler)
from protocol import METHODS
from protocol.methods import MethodSpec
from protocol.schema import SCHEMA_PATH
from server.methods.registry import HANDLERS, mutates, reads, unhandled


def test_every_protocol_method_has_a_handler_and_every_handler_a_row():
    missing, extra = unhandled()
    assert missing == [], "protocol methods with no handler (a module missing from server/methods/__init__.py?)"
    assert extra == [], "handlers with no row in protocol/methods.py"


def test_each_handler_runs_as_its_row_declares():
    for name, spec in METHODS.items():
        handler = HANDLERS[name]
        assert (handler.mutates, handler.exclusive) == (spec.access == "mutate", spec.exclusive), name


def test_a_handler_that_disagrees_with_its_row_is_refused_at_registration():
    with pytest.raises(TypeError, match="compactSession's handler is @reads but its protocol row says"):
        reads("compactSession")
    with pytest.raises(TypeError, match="listSessions's handler is @mutates but its protocol row says"):
        mutates("listSessions")
    with pytest.raises(TypeError, match=r"rewindFiles's handler is @mutates but .*exclusive=True"):
        mutates("rewindFiles")
    with pytest.raises(KeyError, match="noSuchMethod is not a protocol method"):
        mutates("noSuchMethod")
    assert HANDLERS["compactSession"].exclusive and not HANDLERS["listSessions"].mutates  # left as they were


def test_a_row_declares_a_known_access_and_only_a_mutation_is_exclusive():
    spec = METHODS["listSessions"]
    with pytest.raises(ValueError, match="access must be one of"):
        MethodSpec("x", spec.params, spec.result, "x", access="write", exclusive=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="only a mutation can hold its session"):
        MethodSpec("x", spec.params, spec.result, "x", access="read", exclusive=True)
    with pytest.raises(TypeError):
        # both are declared, on every row
        MethodSpec("x", spec.params, spec.result, "x")  # type: ignore[call-arg]


def test_the_schema_clients_read_carries_each_methods_access_and_exclusivity():
    methods = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))["methods"]
    assert {n: (m["access"], m["exclusive"]) for n, m in methods.items()} == {
        n: (s.access, s.exclusive) for n, s in METHODS.items()
    }
    assert methods["compactSession"]["exclusive"] and methods["readTranscript"]["access"] == "read"
