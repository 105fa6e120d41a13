"""The quick loop's slow list is made from measured durations (issue 53): the report is read as pytest writes it,
a test is slow by its time and not its folder, and every entry of the committed list names something that exists."""

from __future__ import annotations

from tests.conftest import SLOW_LIST, TESTS, slow_entries
from tests.slow_list import measured, render

REPORT = """\
........ [100%]
============================== slowest durations ===============================
9.50s call     tests/cli/test_chat_process.py::test_a
1.20s setup    tests/cli/test_chat_process.py::test_a
1.50s call     tests/tools/test_files.py::test_b[with space]
0.40s teardown tests/tools/test_files.py::test_b[with space]
0.30s call     tests/e2e/test_x.py::test_c
=========== 3 passed in 12.00s ===========
"""


def test_durations_are_summed_per_test_and_the_threshold_decides():
    seconds = measured(REPORT)
    assert seconds == {
        "tests/cli/test_chat_process.py::test_a": 10.7,
        "tests/tools/test_files.py::test_b[with space]": 1.9,
        "tests/e2e/test_x.py::test_c": 0.3,
    }
    text = render(seconds, ["tests/reliability/"], 1.9, "report.txt")
    listed = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert listed == [
        "tests/reliability/",
        "tests/cli/test_chat_process.py::test_a",
        "tests/tools/test_files.py::test_b[with space]",
    ]


def test_every_entry_of_the_committed_list_exists():
    tests, whole = slow_entries()
    assert tests, f"{SLOW_LIST} lists no measured test"
    root = TESTS.parent
    for entry in whole:
        assert (root / entry).exists(), entry
    for test_id in tests:
        path, _, name = test_id.partition("::")
        assert (root / path).is_file(), test_id
        assert f"def {name.split('[')[0].split('::')[-1]}(" in (root / path).read_text(encoding="utf-8"), test_id
