"""ACP's model picker: the configured ``[models.NAME]`` as a ``model`` config option, switched with
``session/set_config_option`` from the next model call; every agent message checked against the ACP schema."""

from __future__ import annotations

import pytest
from acp import RequestError

from tests.acp.support import acp_fixture, schema_errors

pytestmark = pytest.mark.asyncio(loop_scope="module")


MODELS = (
    '[models.small]\nmodel = "small-chat"\ncontext_window_tokens = 9000\n[models.deepseek]\nmodel = "deepseek-chat"\n'
)

acp = acp_fixture(config=MODELS)


def picker(options, option_id: str = "model"):
    """The config option ``option_id`` (the model picker; the sandbox mode is offered beside it)."""
    (option,) = [o for o in (getattr(o, "root", o) for o in options) if o.id == option_id]
    return option


async def test_B_SBX_1_the_sandbox_mode_is_a_config_option(acp, folder):
    created = await acp.conn.new_session(cwd=str(folder), mcp_servers=[])
    option = picker(created.config_options, "sandbox")
    assert option.current_value == "workspace-write"
    assert [o.value for o in option.options] == ["workspace-write", "read-only", "off"]
    answer = await acp.conn.set_config_option(config_id="sandbox", session_id=created.session_id, value="read-only")
    assert picker(answer.config_options, "sandbox").current_value == "read-only"
    with pytest.raises(RequestError) as exc:
        await acp.conn.set_config_option(config_id="sandbox", session_id=created.session_id, value="everything")
    assert exc.value.code == -32602
    resumed = await acp.conn.resume_session(session_id=created.session_id, cwd=str(folder), mcp_servers=[])
    assert picker(resumed.config_options, "sandbox").current_value == "read-only"
    assert schema_errors(acp.received, acp.sent_methods) == []


async def test_new_session_offers_the_configured_models_and_the_switch_applies_to_the_next_call(acp, folder):
    acp.fake.reset()
    created = await acp.conn.new_session(cwd=str(folder), mcp_servers=[])
    option = picker(created.config_options)
    assert (option.id, option.category, option.current_value) == ("model", "model", "default")
    assert [o.value for o in option.options] == ["default", "small", "deepseek"]
    assert "9,000-token window" in option.options[1].description
    assert "$0.28/$0.42 per Mtok" in option.options[2].description  # the table's list price

    answer = await acp.conn.set_config_option(config_id="model", session_id=created.session_id, value="small")
    assert picker(answer.config_options).current_value == "small"
    acp.fake.push({"content": "hi"})
    assert (await acp.prompt(created.session_id, "hello")).stop_reason == "end_turn"
    assert acp.fake.requests[-1]["body"]["model"] == "small-chat"
    assert acp.editor.of(created.session_id, "usage_update")[-1].size == 9000

    resumed = await acp.conn.resume_session(session_id=created.session_id, cwd=str(folder), mcp_servers=[])
    assert picker(resumed.config_options).current_value == "small"  # stored with the session
    assert schema_errors(acp.received, acp.sent_methods) == []


async def test_an_unknown_model_or_option_is_an_error_and_changes_nothing(acp, folder):
    sid = (await acp.conn.new_session(cwd=str(folder), mcp_servers=[])).session_id
    with pytest.raises(RequestError) as exc:
        await acp.conn.set_config_option(config_id="model", session_id=sid, value="gpt-9")
    assert exc.value.code == -32602 and exc.value.data is not None and exc.value.data["code"] == "ModelNotFound"
    with pytest.raises(RequestError) as exc:
        await acp.conn.set_config_option(config_id="temperature", session_id=sid, value="hot")
    assert exc.value.data is not None and exc.value.data["code"] == "UnknownConfigOption"
    resumed = await acp.conn.resume_session(session_id=sid, cwd=str(folder), mcp_servers=[])
    assert picker(resumed.config_options).current_value == "default"


async def test_issue_28_the_approval_policy_is_a_mode_config_option_kept_in_sync_with_set_mode(acp, folder):
    """With ``[models.NAME]`` configured, clients that follow ACP's advice use config options and drop ``modes``:
    the policy is offered as a config option (category ``mode``) and both ways of switching it agree."""
    created = await acp.conn.new_session(cwd=str(folder), mcp_servers=[])
    sid = created.session_id
    mode = picker(created.config_options, "mode")
    assert (mode.category, mode.current_value) == ("mode", created.modes.current_mode_id)
    assert [o.value for o in mode.options] == [m.id for m in created.modes.available_modes]

    answer = await acp.conn.set_config_option(config_id="mode", session_id=sid, value="auto")
    assert picker(answer.config_options, "mode").current_value == "auto"
    await acp.wait_for(lambda: acp.editor.of(sid, "current_mode_update"))
    assert [u.current_mode_id for u in acp.editor.of(sid, "current_mode_update")] == ["auto"]
    acp.fake.reset()
    acp.fake.push(
        {"tool_calls": [{"id": "call_mo1", "name": "run_command", "arguments": {"command": "echo hi > m.txt"}}]},
        {"content": "ok"},
    )
    assert (await acp.prompt(sid, "run")).stop_reason == "end_turn"
    assert acp.editor.permissions == [] and (folder / "m.txt").exists()  # the option's policy is the session's

    await acp.conn.set_session_mode(session_id=sid, mode_id="ask")
    await acp.wait_for(lambda: acp.editor.of(sid, "config_option_update"))
    [update] = acp.editor.of(sid, "config_option_update")
    assert picker(update.config_options, "mode").current_value == "ask"
    resumed = await acp.conn.resume_session(session_id=sid, cwd=str(folder), mcp_servers=[])
    assert picker(resumed.config_options, "mode").current_value == "ask" == resumed.modes.current_mode_id
    with pytest.raises(RequestError) as exc:
        await acp.conn.set_config_option(config_id="mode", session_id=sid, value="yolo")
    assert exc.value.data is not None and exc.value.data["code"] == "UnknownMode"
    assert schema_errors(acp.received, acp.sent_methods) == []
