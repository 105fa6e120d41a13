"""The workspace boundary and where secrets may go, through real turns: the fake model asks the file tools to
escape the session folder every way we know (``..``, absolute paths, symlinks out, a symlink ``run_command``
creates during the turn, case and Unicode look-alikes); nothing outside is read or written. Artifacts are
readable only from their own session. The provider key never reaches a command's environment, the transcript,
events, notifications, or any file under the data folder or the server's log.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from server.cli.client import Client, RpcError
from tests.fakes.fake_provider import FakeProvider
from tests.harness import API_KEY, log_path
from tests.reliability.support import FIND_SERVER, start, transcript, turn, updates

pytestmark = pytest.mark.asyncio(loop_scope="module")
SECRET = "TOP-SECRET-CONTENT-41c7"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(api_key=API_KEY) as provider:
        yield provider


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("boundary") / "home"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(home, fake) -> AsyncIterator[Client]:
    home.mkdir()
    client = await start(home, fake.url, OPENAI_API_KEY=API_KEY, SOME_TOKEN=API_KEY)
    yield client
    await client.close()


@pytest.fixture
def layout(tmp_path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    work = tmp_path / "work"
    work.mkdir()
    (work / "inside.txt").write_text("inside\n")
    os.symlink(outside, work / "link_out")
    os.symlink(outside / "secret.txt", work / "secret_link.txt")
    return work, outside


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def call(n: int, name: str, **arguments) -> dict:
    return {"id": f"call_{n}", "name": name, "arguments": arguments}


async def run_calls(server, fake, sid, calls: list[dict]) -> list[dict]:
    fake.reset()
    fake.push({"tool_calls": calls}, {"content": "done"})
    result = await turn(server, sid, "try it")
    assert result["stopReason"] == "endTurn", result
    return [u for u in updates(server, sid, "toolResult") if u["toolCallId"] in {c["id"] for c in calls}]


ESCAPES = [
    "../outside/secret.txt",
    "work/../../outside/secret.txt",
    "./../outside/secret.txt",
    "link_out/secret.txt",
    "secret_link.txt",
    "link_out/../outside/secret.txt",
    "..\\outside\\secret.txt",
    "../OUTSIDE/secret.txt",
    "../Outside/SECRET.TXT",
    "\u2024\u2024/outside/secret.txt",  # one-dot leaders
    "\uff0e\uff0e/outside/secret.txt",  # fullwidth full stops
    "..\u2215outside\u2215secret.txt",  # division slash
    ".\u0307./outside/secret.txt",  # a combining dot
    "%2e%2e/outside/secret.txt",
]


async def test_file_tools_never_read_outside(server, fake, layout):
    work, outside = layout
    sid = (await server.request("createSession", {"cwd": str(work)}))["sessionId"]
    absolute = str(outside / "secret.txt")
    calls = [call(i, "read_file", path=p) for i, p in enumerate([*ESCAPES, absolute, "/etc/passwd"])]
    calls += [
        call(100, "list_files", path=".."),
        call(101, "list_files", path=str(outside)),
        call(102, "list_files", path="link_out"),
        call(103, "search_files", pattern="SECRET", path=".."),
        call(104, "search_files", pattern="SECRET"),
        call(105, "list_files", pattern="../**/*"),
    ]
    results = await run_calls(server, fake, sid, calls)
    assert len(results) == len(calls)
    for r in results:
        assert SECRET not in r["content"], r
        if int(r["toolCallId"].split("_")[1]) >= 100:  # listings and searches name nothing outside
            assert "secret.txt" not in r["content"].replace("secret_link.txt", ""), r
    denied = {r["toolCallId"] for r in results if "Permission denied" in r["content"]}
    for i in (0, 1, 3, 4, len(ESCAPES), len(ESCAPES) + 1):  # the real escapes are refused as such
        assert f"call_{i}" in denied, (calls[i], [r for r in results if r["toolCallId"] == f"call_{i}"])
    assert SECRET not in json.dumps(await transcript(server, sid))


async def test_file_tools_never_write_outside_even_through_a_link_made_this_turn(server, fake, layout):
    work, outside = layout
    before = tree(outside)
    sid = (await server.request("createSession", {"cwd": str(work)}))["sessionId"]
    calls = [
        call(0, "run_command", command="ln -s ../outside made_link && ln -s ../outside/secret.txt made.txt"),
        call(1, "write_file", path="made_link/new.txt", content="escaped"),
        call(2, "write_file", path="made.txt", content="overwritten"),
        call(3, "edit_file", path="made.txt", old_string=SECRET, new_string="edited"),
        call(4, "read_file", path="made_link/secret.txt"),
        call(5, "write_file", path="../outside/new2.txt", content="escaped"),
        call(6, "write_file", path=str(outside / "abs.txt"), content="escaped"),
        call(7, "edit_file", path="link_out/secret.txt", old_string=SECRET, new_string="edited"),
        call(8, "write_file", path="\uff0e\uff0e/outside/fw.txt", content="inside, oddly named"),
    ]
    results = await run_calls(server, fake, sid, calls)
    assert tree(outside) == before, "a file outside the session folder was written"
    by_id = {r["toolCallId"]: r["content"] for r in results}
    for n in range(1, 8):
        assert "Permission denied" in by_id[f"call_{n}"], (n, by_id[f"call_{n}"])
        assert SECRET not in by_id[f"call_{n}"]


async def test_artifacts_are_readable_only_from_their_own_session(server, fake, layout):
    work, _ = layout
    owner = (await server.request("createSession", {"cwd": str(work)}))["sessionId"]
    await run_calls(server, fake, owner, [call(0, "run_command", command="seq 1 30000")])
    artifact = updates(server, owner, "artifactCreated")[-1]["artifactId"]
    assert (await server.request("readArtifact", {"sessionId": owner, "artifactId": artifact}))["totalBytes"] > 0
    other = (await server.request("createSession", {"cwd": str(work)}))["sessionId"]
    with pytest.raises(RpcError) as refused:
        await server.request("readArtifact", {"sessionId": other, "artifactId": artifact})
    assert refused.value.code == -32602 and refused.value.data["code"] == "ArtifactNotFound"
    results = await run_calls(
        server,
        fake,
        other,
        [call(1, "read_artifact", artifact_id=artifact), call(2, "read_file", path=f"../../{artifact}.txt")],
    )
    for r in results:
        assert "29999" not in r["content"], r


async def test_the_provider_key_cannot_be_read_from_the_servers_own_environment_block(server, fake, layout):
    """A command read the key from ``/proc/$PPID/environ`` (the server's original environment, which
    scrubbing ``os.environ`` does not change). The server re-executes itself without it and takes the key over a
    pipe it reads once and closes, so its environment block holds no key. (In the sandbox, B-SBX-1, a command
    cannot read the server's environment at all; unconfined, it can, and it finds no key there.)"""
    work, _ = layout
    sid = (await server.request("createSession", {"cwd": str(work), "sandbox": "off"}))["sessionId"]
    results = await run_calls(
        server,
        fake,
        sid,
        [
            call(
                0,
                "run_command",
                command=(
                    FIND_SERVER
                    + "tr '\\0' '\\n' < /proc/$p/environ; tr '\\0' ' ' < /proc/$p/cmdline; echo; echo PPID=$p"
                ),
            )
        ],
    )
    content = results[0]["content"]
    assert "PPID=" in content and "THREADLINE_HOME=" in content, content  # it did read the server's environment
    assert API_KEY not in content and "OPENAI_API_KEY" not in content and "SOME_TOKEN" not in content
    assert fake.requests[-1]["headers"]["authorization"] == "<redacted>"  # the server still has the key


async def test_the_provider_key_goes_nowhere_but_the_provider(fake, layout, tmp_path):
    """Its own server (not the module's): it is closed before the grep, and no other test may depend on that."""
    work, _ = layout
    home = tmp_path / "home"
    home.mkdir()
    server = await start(home, fake.url, OPENAI_API_KEY=API_KEY, SOME_TOKEN=API_KEY)
    try:
        sid = (await server.request("createSession", {"cwd": str(work)}))["sessionId"]
        results = await run_calls(
            server,
            fake,
            sid,
            [call(0, "run_command", command='env; echo "[$THREADLINE_API_KEY][$OPENAI_API_KEY][$SOME_TOKEN]"')],
        )
        assert "[][][]" in results[0]["content"] and API_KEY not in results[0]["content"]
        assert fake.requests[-1]["headers"]["authorization"] == "<redacted>"  # it was sent (the fake checks it)
        assert API_KEY not in json.dumps(server.notifications)
        assert API_KEY not in json.dumps(await transcript(server, sid))
    finally:
        await server.close()  # let the server checkpoint its WAL and flush its log before the grep
    leaks = [str(p) for p in [*home.rglob("*"), log_path(home)] if p.is_file() and API_KEY.encode() in p.read_bytes()]
    assert leaks == []


async def test_a_key_in_initializationOptions_or_in_the_base_url_reaches_no_log_or_turn_error(fake, tmp_path):
    """A key passed in ``initializationOptions.provider.apiKey`` (which pygls logs whole at DEBUG) or as
    the password of the base URL must reach no log line at any level and no turn error."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    url_secret = "URLPASS-5a9e-SECRET"
    refused = f"http://token:{url_secret}@127.0.0.1:9/v1"  # nothing listens on port 9: the turn fails to connect
    client = await start(
        home,
        None,
        args=("--log-level", "DEBUG"),
        THREADLINE_API_KEY="",
        options={"provider": {"baseUrl": refused, "apiKey": API_KEY, "model": "fake-model"}},
    )
    try:
        sid = (await client.request("createSession", {"cwd": str(work)}))["sessionId"]
        result = await turn(client, sid, "hello")
        assert result["stopReason"] == "error" and "127.0.0.1:9" in result["error"]["message"], result
        said = json.dumps([result, client.notifications, await transcript(client, sid)])
        assert url_secret not in said and API_KEY not in said
    finally:
        await client.close()
    log = log_path(home).read_bytes()
    assert b"initializationOptions" in log or b"initialize" in log  # DEBUG logging did record the request
    assert url_secret.encode() not in log and API_KEY.encode() not in log
