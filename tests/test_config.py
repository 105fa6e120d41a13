"""Settings precedence (PROTOCOL.md "Starting it"): defaults < config.toml < environment < initializationOptions."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.config import ConfigError, load_settings


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def test_defaults_with_an_empty_home(tmp_path):
    s = load_settings({"THREADLINE_HOME": str(tmp_path)})
    assert (s.approval_policy, s.threshold_ratio, s.keep_recent_tokens) == ("ask", 0.8, 8000)
    assert s.provider.base_url is None and not s.provider.configured
    assert s.database_path == tmp_path / "threadline.db"


def test_config_toml_then_environment_then_initialization_options(tmp_path):
    write_config(tmp_path, '[provider]\nbase_url = "http://toml/v1"\nmodel = "toml-model"\napi_key = "toml-key"\n'
                           'context_window_tokens = 1000\n[context]\nthreshold_ratio = 0.5\nkeep_recent_tokens = 100\n')
    s = load_settings({"THREADLINE_HOME": str(tmp_path)})
    assert (s.provider.base_url, s.provider.model, s.provider.context_window_tokens) == ("http://toml/v1", "toml-model", 1000)
    assert (s.threshold_ratio, s.keep_recent_tokens) == (0.5, 100)
    s = load_settings({"THREADLINE_HOME": str(tmp_path), "THREADLINE_MODEL": "env-model",
                       "THREADLINE_KEEP_RECENT_TOKENS": "300", "THREADLINE_THRESHOLD_RATIO": "0.6"})
    assert (s.provider.model, s.keep_recent_tokens, s.threshold_ratio) == ("env-model", 300, 0.6)
    assert s.provider.api_key == "toml-key"
    s = s.with_initialization_options({"provider": {"model": "client-model", "apiKey": "client-key"},
                                       "approvalPolicy": "auto"})
    assert (s.provider.model, s.provider.api_key, s.approval_policy) == ("client-model", "client-key", "auto")
    assert s.provider.base_url == "http://toml/v1"


def test_the_api_key_is_not_in_the_settings_repr(tmp_path):
    s = load_settings({"THREADLINE_HOME": str(tmp_path), "THREADLINE_API_KEY": "sk-very-secret"})
    assert "sk-very-secret" not in repr(s)


@pytest.mark.parametrize("env, message", [
    ({"THREADLINE_CONTEXT_WINDOW": "lots"}, "THREADLINE_CONTEXT_WINDOW"),
    ({"THREADLINE_KEEP_RECENT_TOKENS": "-5"}, "THREADLINE_KEEP_RECENT_TOKENS"),
    ({"THREADLINE_THRESHOLD_RATIO": "1.5"}, "threshold_ratio"),
    ({"THREADLINE_COMPACT_TARGET_RATIO": "0"}, "compact_target_ratio"),
    ({"THREADLINE_COMPACT_TARGET_RATIO": "nan"}, "compact_target_ratio"),
    ({"THREADLINE_COMPACT_TARGET_RATIO": "half"}, "compact_target_ratio"),
    ({"THREADLINE_APPROVAL_POLICY": "yolo"}, "approval_policy"),
])
def test_bad_values_name_the_setting(tmp_path, env, message):
    with pytest.raises(ConfigError, match=message):
        load_settings({"THREADLINE_HOME": str(tmp_path), **env})


def test_a_broken_config_toml_is_a_clear_error(tmp_path):
    write_config(tmp_path, "[provider\n")
    with pytest.raises(ConfigError, match="config.toml"):
        load_settings({"THREADLINE_HOME": str(tmp_path)})


def test_B_CACHE_2_the_compaction_target_ratio_comes_from_config_then_env(tmp_path):
    assert load_settings({"THREADLINE_HOME": str(tmp_path)}).compact_target_ratio == 0.5
    write_config(tmp_path, "[context]\ncompact_target_ratio = 0.4\n")
    assert load_settings({"THREADLINE_HOME": str(tmp_path)}).compact_target_ratio == 0.4
    env = {"THREADLINE_HOME": str(tmp_path), "THREADLINE_COMPACT_TARGET_RATIO": "0.3"}
    assert load_settings(env).compact_target_ratio == 0.3
