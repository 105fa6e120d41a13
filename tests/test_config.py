"""Settings precedence (protocol/README.md, "The fixed contract"): defaults < config.toml < environment < initializationOptions."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.updates import InitializationOptions, ProviderOptions
from server.config import load_settings
from server.config_file import ConfigError
from server.context.budget import CLEAR_AT_LEAST, KEEP_RECENT_OUTPUTS


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def test_defaults_with_an_empty_home(tmp_path):
    s = load_settings({"THREADLINE_HOME": str(tmp_path)})
    assert (s.approval_policy, s.threshold_ratio, s.keep_recent_tokens) == ("ask", 0.8, 8000)
    assert s.provider.base_url is None and not s.provider.configured
    assert s.database_path == tmp_path / "threadline.db"


def test_config_toml_then_environment_then_initialization_options(tmp_path):
    write_config(
        tmp_path,
        '[provider]\nbase_url = "http://toml/v1"\nmodel = "toml-model"\napi_key = "toml-key"\n'
        "context_window_tokens = 1000\n[context]\nthreshold_ratio = 0.5\nkeep_recent_tokens = 100\n",
    )
    s = load_settings({"THREADLINE_HOME": str(tmp_path)})
    assert (s.provider.base_url, s.provider.model, s.provider.context_window_tokens) == (
        "http://toml/v1",
        "toml-model",
        1000,
    )
    assert (s.threshold_ratio, s.keep_recent_tokens) == (0.5, 100)
    s = load_settings(
        {
            "THREADLINE_HOME": str(tmp_path),
            "THREADLINE_MODEL": "env-model",
            "THREADLINE_KEEP_RECENT_TOKENS": "300",
            "THREADLINE_THRESHOLD_RATIO": "0.6",
        }
    )
    assert (s.provider.model, s.keep_recent_tokens, s.threshold_ratio) == ("env-model", 300, 0.6)
    assert s.provider.api_key == "toml-key"
    s = s.with_initialization_options(
        InitializationOptions(
            provider=ProviderOptions(model="client-model", api_key="client-key"), approval_policy="auto"
        )
    )
    assert (s.provider.model, s.provider.api_key, s.approval_policy) == ("client-model", "client-key", "auto")
    assert s.provider.base_url == "http://toml/v1"


def test_the_api_key_is_not_in_the_settings_repr(tmp_path):
    s = load_settings({"THREADLINE_HOME": str(tmp_path), "THREADLINE_API_KEY": "sk-very-secret"})
    assert "sk-very-secret" not in repr(s)


@pytest.mark.parametrize(
    "env, message",
    [
        ({"THREADLINE_CONTEXT_WINDOW": "lots"}, "THREADLINE_CONTEXT_WINDOW"),
        ({"THREADLINE_KEEP_RECENT_TOKENS": "-5"}, "THREADLINE_KEEP_RECENT_TOKENS"),
        ({"THREADLINE_THRESHOLD_RATIO": "1.5"}, "threshold_ratio"),
        ({"THREADLINE_COMPACT_TARGET_RATIO": "0"}, "compact_target_ratio"),
        ({"THREADLINE_COMPACT_TARGET_RATIO": "nan"}, "compact_target_ratio"),
        ({"THREADLINE_COMPACT_TARGET_RATIO": "half"}, "compact_target_ratio"),
        ({"THREADLINE_APPROVAL_POLICY": "yolo"}, "approval_policy"),
    ],
)
def test_bad_values_name_the_setting(tmp_path, env, message):
    with pytest.raises(ConfigError, match=message):
        load_settings({"THREADLINE_HOME": str(tmp_path), **env})


def test_a_broken_config_toml_is_a_clear_error(tmp_path):
    write_config(tmp_path, "[provider\n")
    with pytest.raises(ConfigError, match=r"config\.toml"):
        load_settings({"THREADLINE_HOME": str(tmp_path)})


def test_B_CACHE_2_the_compaction_target_ratio_comes_from_config_then_env(tmp_path):
    assert load_settings({"THREADLINE_HOME": str(tmp_path)}).compact_target_ratio == 0.5
    write_config(tmp_path, "[context]\ncompact_target_ratio = 0.4\n")
    assert load_settings({"THREADLINE_HOME": str(tmp_path)}).compact_target_ratio == 0.4
    env = {"THREADLINE_HOME": str(tmp_path), "THREADLINE_COMPACT_TARGET_RATIO": "0.3"}
    assert load_settings(env).compact_target_ratio == 0.3


def test_the_provider_kind_defaults_to_openai_chat_completions_with_no_default_base_url(tmp_path):
    s = load_settings({"THREADLINE_HOME": str(tmp_path)})
    assert (s.provider.kind, s.provider.base_url) == ("openai", None)


def test_a_native_provider_kind_comes_from_the_environment_or_config_and_brings_its_default_endpoint(tmp_path):
    s = load_settings({"THREADLINE_HOME": str(tmp_path), "THREADLINE_PROVIDER": "anthropic"})
    assert (s.provider.kind, s.provider.base_url) == ("anthropic", "https://api.anthropic.com/v1")
    write_config(tmp_path, '[provider]\nkind = "openai-responses"\nmodel = "gpt-5-codex"\n')
    s = load_settings({"THREADLINE_HOME": str(tmp_path)})
    assert (s.provider.kind, s.provider.base_url) == ("openai-responses", "https://api.openai.com/v1")
    assert s.provider.configured
    s = load_settings({"THREADLINE_HOME": str(tmp_path), "THREADLINE_BASE_URL": "http://gateway/v1"})
    assert s.provider.base_url == "http://gateway/v1"


def test_an_unknown_provider_kind_is_a_config_error_naming_the_setting_and_the_kinds(tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"THREADLINE_PROVIDER must be one of 'openai', 'anthropic', "
        r"'openai-responses', got 'claude'",
    ):
        load_settings({"THREADLINE_HOME": str(tmp_path), "THREADLINE_PROVIDER": "claude"})
    write_config(tmp_path, '[provider]\nkind = "gemini"\n')
    with pytest.raises(ConfigError, match=r"provider.kind must be one of"):
        load_settings({"THREADLINE_HOME": str(tmp_path)})


def test_a_configured_price_is_read_per_million_tokens_and_a_bad_one_is_refused(tmp_path):
    write_config(tmp_path, "[provider]\nprice = {input = 3, cached_input = 0.3, cache_write = 3.75, output = 15}\n")
    price = load_settings({"THREADLINE_HOME": str(tmp_path)}).provider.price
    assert price is not None
    assert (price.input, price.cached_input, price.cache_write, price.output) == (3.0, 0.3, 3.75, 15.0)
    for bad, message in (
        ("{input = 3}", "price.output is required"),
        ("{input = -1, output = 2}", "non-negative"),
        ("{input = 1, output = 2, cached = 1}", "unknown field"),
    ):
        write_config(tmp_path, f"[provider]\nprice = {bad}\n")
        with pytest.raises(ConfigError, match=message):
            load_settings({"THREADLINE_HOME": str(tmp_path)})


def test_initialization_options_may_switch_the_provider_kind(tmp_path):
    s = load_settings({"THREADLINE_HOME": str(tmp_path)}).with_initialization_options(
        InitializationOptions(provider=ProviderOptions(kind="anthropic", model="claude-sonnet-4-5"))
    )
    assert (s.provider.kind, s.provider.base_url) == ("anthropic", "https://api.anthropic.com/v1")


def test_named_models_share_the_default_server_of_their_kind_and_bring_their_own_otherwise(tmp_path):
    write_config(
        tmp_path,
        """
[provider]
base_url = "http://localhost:8000/v1"
model = "qwen3-coder"
[models.local-big]
model = "qwen3-coder-plus"
context_window_tokens = 200000
[models.sonnet]
provider = "anthropic"
model = "claude-sonnet-4-5"
api_key_env = "ANTHROPIC_API_KEY"
price = {input = 3, output = 15}
""",
    )
    s = load_settings(
        {"THREADLINE_HOME": str(tmp_path), "THREADLINE_API_KEY": "sk-default", "ANTHROPIC_API_KEY": "sk-ant"}
    )
    local, sonnet = s.models["local-big"], s.models["sonnet"]
    assert (local.kind, local.base_url, local.api_key, local.context_window_tokens) == (
        "openai",
        "http://localhost:8000/v1",
        "sk-default",
        200000,
    )
    assert (sonnet.kind, sonnet.base_url, sonnet.api_key) == ("anthropic", "https://api.anthropic.com/v1", "sk-ant")
    assert sonnet.price is not None and sonnet.price.output == 15.0
    assert s.api_keys() == ("sk-default", "sk-ant")
    assert "sk-ant" not in repr(s)


@pytest.mark.parametrize(
    "table, message",
    [
        ("[models.x]\ncontext_window_tokens = 10\n", "models.x.model is required"),
        ('[models.x]\nmodel = "m"\nprovider = "gemini"\n', "models.x.provider must be one of"),
        ('[models.x]\nmodel = "m"\nwindow = 3\n', "models.x: unknown field"),
        ('[models.x]\nmodel = "m"\nprice = {input = 1}\n', "models.x.price.output is required"),
    ],
)
def test_a_bad_named_model_names_the_setting(tmp_path, table, message):
    write_config(tmp_path, table)
    with pytest.raises(ConfigError, match=message):
        load_settings({"THREADLINE_HOME": str(tmp_path)})


def test_the_default_provider_may_name_the_variable_holding_its_key(tmp_path):
    write_config(
        tmp_path, '[provider]\nkind = "anthropic"\nmodel = "claude-sonnet-4-5"\napi_key_env = "ANTHROPIC_API_KEY"\n'
    )
    s = load_settings({"THREADLINE_HOME": str(tmp_path), "ANTHROPIC_API_KEY": "sk-ant"})
    assert s.provider.api_key == "sk-ant"
    assert (
        load_settings(
            {"THREADLINE_HOME": str(tmp_path), "ANTHROPIC_API_KEY": "sk-ant", "THREADLINE_API_KEY": "sk-env"}
        ).provider.api_key
        == "sk-env"
    )  # the environment wins


def test_every_config_in_the_readme_loads(tmp_path):
    """The README's config.toml examples (one per provider kind, named models) are real settings."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", readme, re.S)
    assert len(blocks) >= 8
    kinds = set()
    for n, block in enumerate(blocks):
        home = tmp_path / str(n)
        write_config(home, block)
        s = load_settings(
            {
                "THREADLINE_HOME": str(home),
                "ANTHROPIC_API_KEY": "k",
                "OPENAI_API_KEY": "k",
                "DEEPSEEK_API_KEY": "k",
                "OPENROUTER_API_KEY": "k",
            }
        )
        kinds |= {s.provider.kind, *(m.kind for m in s.models.values())}
        for m in s.models.values():  # every model has its key, except an OpenAI-style local (http) server
            if m.kind == "openai":
                assert m.base_url is not None
                if not m.base_url.startswith("https"):
                    continue
            assert m.api_key
    assert kinds == {"openai", "anthropic", "openai-responses"}


@pytest.mark.parametrize(
    "text, message",
    [
        ('[provider]\nmax_output_tokens = "5"\n', r"provider.max_output_tokens must be a whole number, got a string"),
        ("max_iterations = 0\n", r"max_iterations must be a positive whole number"),
        ("provider = 3\n", r"provider must be a table"),
        (
            '[models.fast]\nmodel = "m"\nprice = {input = -1, output = 2}\n',
            r"models.fast.price.input must be a non-negative",
        ),
        ("[models]\nx = 3\n", r"models.x must be a table"),
        ("[provider]\nprice = {input = inf, output = 2}\n", r"provider.price.input must be a non-negative number"),
    ],
)
def test_issue_14_config_toml_is_decoded_into_typed_tables_and_a_bad_value_names_its_setting(tmp_path, text, message):
    write_config(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as raised:
        load_settings({"THREADLINE_HOME": str(tmp_path)})
    assert str(raised.value).startswith(str(tmp_path / "config.toml"))  # and the file


def test_issue_14_zero_is_a_value_not_a_missing_setting(tmp_path):
    write_config(tmp_path, "checkpoint_max_file_bytes = 0\n[context]\nkeep_recent_tokens = 0\n")
    s = load_settings({"THREADLINE_HOME": str(tmp_path)})
    assert (s.checkpoint_max_file_bytes, s.keep_recent_tokens) == (0, 0)


def test_the_daemon_idle_limit_from_config_then_environment(tmp_path):
    assert load_settings({"THREADLINE_HOME": str(tmp_path)}).daemon_idle_exit_seconds == 900
    (tmp_path / "config.toml").write_text("[daemon]\nidle_exit_seconds = 30\n")
    assert load_settings({"THREADLINE_HOME": str(tmp_path)}).daemon_idle_exit_seconds == 30
    env = {"THREADLINE_HOME": str(tmp_path), "THREADLINE_DAEMON_IDLE_SECONDS": "5"}
    assert load_settings(env).daemon_idle_exit_seconds == 5
    (tmp_path / "config.toml").write_text("[daemon]\nidle_after = 30\n")
    with pytest.raises(ConfigError, match="daemon: unknown field idle_after"):
        load_settings({"THREADLINE_HOME": str(tmp_path)})


def test_B_BUDGET_1_the_context_budget_settings(tmp_path: Path):
    env = {"THREADLINE_HOME": str(tmp_path)}
    default = load_settings(env)
    assert default.context_budget is None  # "auto"
    assert (default.keep_recent_outputs, default.clear_at_least) == (KEEP_RECENT_OUTPUTS, CLEAR_AT_LEAST)
    write_config(tmp_path, '[context]\nbudget = "auto"\nkeep_recent_outputs = 3\nclear_at_least = 500\n')
    got = load_settings(env)
    assert (got.context_budget, got.keep_recent_outputs, got.clear_at_least) == (None, 3, 500)
    write_config(tmp_path, "[context]\nbudget = 60000\n")
    assert load_settings(env).context_budget == 60_000
    for bad in ('"lots"', "0", "-5"):
        write_config(tmp_path, f"[context]\nbudget = {bad}\n")
        with pytest.raises(ConfigError, match=r"context\.budget"):
            load_settings(env)
