"""Storage faults: a read-only data folder, a full disk, an artifact folder that cannot be written.

Injected for real, as root can't be stopped by chmod: a tiny tmpfs mounted read-only (or remounted read-only
under an existing database), a tiny tmpfs filled to the last byte, and a regular file where the artifacts
folder should be. Each gives a clear error where it happens, nothing stored before is lost, and the server
goes on working once the fault is gone.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from server.cli.client import RpcError
from tests.harness import REPO, closing, server_env
from tests.reliability.support import start, transcript, turn, updates


def mount_tmpfs(path: Path, size: str, *options: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    opts = ",".join([f"size={size}", *options])
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True)
    if done.returncode:  # the fault cannot be injected: fail loudly rather than pass without proving anything
        pytest.fail(
            f"cannot mount a tmpfs here (these tests need root, as on the project's machines and CI): "
            f"{done.stderr.decode().strip()}"
        )


@pytest.fixture
def tmpfs(tmp_path) -> Iterator[Callable[..., Path]]:
    mounted: list[Path] = []

    def make(name: str, size: str, *options: str) -> Path:
        path = tmp_path / name
        mount_tmpfs(path, size, *options)
        mounted.append(path)
        return path

    yield make
    for path in mounted:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def serve_and_fail(home: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "server"],
        input=b"",
        capture_output=True,
        timeout=60,
        env=server_env(home, None),
        cwd=REPO,
    )


def test_a_read_only_data_folder_is_a_clear_error_at_start(tmpfs):
    home = tmpfs("ro", "64k", "ro")
    done = serve_and_fail(home)
    assert done.returncode == 2, done
    message = done.stderr.decode()
    assert "threadline:" in message and str(home) in message and "Traceback" not in message, message


async def test_an_existing_database_that_became_read_only_is_a_clear_error_at_start(tmpfs, tmp_path):
    home = tmpfs("was-rw", "4m")
    client = await start(home)
    sid = (await client.request("createSession", {"cwd": str(tmp_path)}))["sessionId"]
    await client.request("importSession", {"cwd": str(tmp_path), "messages": [{"role": "user", "content": "kept"}]})
    await client.close()
    subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)
    done = serve_and_fail(home)
    assert done.returncode == 2 and str(home) in done.stderr.decode() and "Traceback" not in done.stderr.decode()
    subprocess.run(["mount", "-o", "remount,rw", str(home)], check=True)
    async with closing(start(home)) as client:
        assert (await client.request("readTranscript", {"sessionId": sid}))["items"] == []
        assert len((await client.request("listSessions", {}))["sessions"]) == 2


async def test_a_full_disk_fails_the_write_that_hit_it_and_nothing_else(tmpfs, tmp_path, fake):
    home = tmpfs("full", "2m")
    async with closing(start(home, fake.url)) as client:
        sid = (await client.request("createSession", {"cwd": str(tmp_path)}))["sessionId"]
        fake.push({"content": "stored before the disk filled"})
        assert (await turn(client, sid, "first"))["stopReason"] == "endTurn"
        before = await transcript(client, sid)
        filler = home / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=4k"], capture_output=True)  # until ENOSPC
        big = [{"role": "user", "content": "y" * 400_000}]
        with pytest.raises(RpcError) as full:
            await client.request("importSession", {"cwd": str(tmp_path), "messages": big})
        assert full.value.code == -32603 and full.value.data["code"] == "StorageFailure"
        assert "full" in full.value.message.lower(), full.value.message
        failed = await turn(client, sid, "z" * 400_000)  # the turn's first write fails: it ends saying why
        assert failed["stopReason"] == "error" and failed["error"]["code"] == "StorageFailure", failed
        assert "full" in failed["error"]["message"].lower()
        assert updates(client, sid, "turnCompleted")[-1]["stopReason"] == "error"
        assert await transcript(client, sid) == before, "a failed write changed what was stored"
        filler.unlink()
        fake.reset()
        fake.push({"content": "stored after space came back"})
        assert (await turn(client, sid, "again"))["stopReason"] == "endTurn"
        after = await transcript(client, sid)
        assert after[: len(before)] == before and after[-1]["content"] == "stored after space came back"


async def test_R_ART_3_an_artifact_write_failure_truncates_and_keeps_the_tool_successful(tmp_path, fake):
    home = tmp_path / "home"
    home.mkdir()
    (home / "artifacts").write_text("a file where the artifacts folder should be")
    async with closing(start(home, fake.url)) as client:
        sid = (await client.request("createSession", {"cwd": str(tmp_path)}))["sessionId"]
        fake.push(
            {"tool_calls": [{"id": "big", "name": "run_command", "arguments": {"command": "seq 1 40000"}}]},
            {"content": "ok"},
        )
        assert (await turn(client, sid, "big output"))["stopReason"] == "endTurn"
        result = updates(client, sid, "toolResult")[-1]
        assert result["status"] == "ok", result["status"]
        assert "[output truncated to fit" in result["content"] and "could not be stored" in result["content"]
        assert len(result["content"]) <= 50_000 and result["content"].startswith("1\n2\n3\n")
        assert any("artifact" in n["message"] for n in updates(client, sid, "notice") if n["level"] == "warning")
        assert not updates(client, sid, "artifactCreated")
        stored = [i for i in await transcript(client, sid) if i["role"] == "tool"]
        assert stored[-1]["content"] == result["content"]


async def test_a_zero_byte_database_file_is_refused_not_silently_replaced_by_an_empty_store(tmp_path):
    """A truncated (0-byte) ``threadline.db`` became a new empty store, so every session seemed gone
    and the next write made that permanent. The server refuses to start, says why, and leaves the file alone."""
    home = tmp_path / "home"
    client = await start(home)
    await client.request("importSession", {"cwd": str(tmp_path), "messages": [{"role": "user", "content": "x"}]})
    await client.close()
    for suffix in ("", "-wal", "-shm"):
        path = home / f"threadline.db{suffix}"
        if path.exists():
            path.write_bytes(b"")  # truncated, as a full disk or a bad copy leaves it
    done = serve_and_fail(home)
    message = done.stderr.decode()
    assert done.returncode == 2 and "Traceback" not in message, done
    assert str(home / "threadline.db") in message and "empty (0 bytes)" in message, message
    assert (home / "threadline.db").stat().st_size == 0
