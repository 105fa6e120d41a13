"""Settings: environment, then ``$THREADLINE_HOME/config.toml``, then ``initializationOptions`` (protocol/README.md, "The fixed contract").

Precedence, lowest first: built-in defaults < config.toml < environment < initializationOptions. The API key
is held here and handed only to the provider client; it is never logged, stored or passed to tools.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from protocol.updates import InitializationOptions, ProviderOptions
from server.config_file import (
    BRAVE_KEY_ENV,
    ConfigError,
    ModelTable,
    PriceTable,
    SandboxTable,
    WebTable,
    home_folder,
    read_config,
)
from server.context.budget import CLEAR_AT_LEAST, KEEP_RECENT_OUTPUTS
from server.errors import McpConfigError
from server.hooks.config import HookConfigError, HookSpec, parse_hooks
from server.mcp.config import McpServerConfig, parse_user_servers
from server.providers.capabilities import Price
from server.providers.kinds import PROVIDER_KINDS as KINDS
from server.sandbox.policy import DEFAULT_MODE, MODES, SandboxSettings, always_hidden, default_deny_read
from server.security.approval_rules import ApprovalRules, RuleError
from server.tools.base import ToolSettings
from server.tools.web.settings import WebSettings, parse_web

N = TypeVar("N", int, float)

APPROVAL_POLICIES = ("ask", "autoEdit", "auto", "plan")  # plan: read-only
# Each kind is registered once (server.providers.kinds); "openai" is Chat Completions (any compatible server).
PROVIDER_KINDS = tuple(KINDS)
# Where a native kind lives when no base URL is configured (an "openai" server has no such default).
DEFAULT_BASE_URLS = {k.name: k.default_base_url for k in KINDS.values() if k.default_base_url}


@dataclass(frozen=True)
class ProviderSettings:
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    model: str | None = None
    context_window_tokens: int | None = None
    kind: str = "openai"
    max_output_tokens: int | None = None  # Anthropic requires max_tokens; None: the kind's default
    thinking_budget_tokens: int | None = None  # Anthropic extended thinking; None: off
    price: Price | None = None  # overrides the table in providers/capabilities.py

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)


@dataclass(frozen=True)
class Settings:
    home: Path
    provider: ProviderSettings = ProviderSettings()
    approval_policy: str = "ask"
    threshold_ratio: float = 0.8
    keep_recent_tokens: int = 8000
    compact_target_ratio: float = 0.5  # B-CACHE-2: a summary-path view comes out at or under this share
    context_budget: int | None = None  # B-BUDGET-1: [context] budget in tokens; None: "auto"
    keep_recent_outputs: int = KEEP_RECENT_OUTPUTS
    clear_at_least: int = CLEAR_AT_LEAST
    max_iterations: int = 50
    agents_max_parallel: int = 3  # [agents] max_parallel: a parent's ``task`` calls running at once (B-SUB-1)
    command_timeout_seconds: float = 120.0
    max_background_processes: int = 4  # [tools] max_background_processes: per session, running at once
    max_message_bytes: int = 64 * 1024 * 1024
    provider_read_timeout_seconds: float = 120.0  # silence on an open stream longer than this is a timeout
    pattern_timeout_seconds: float = 10.0  # an untrusted regex/glob job is killed after this (server.patterns)
    editor_timeout_seconds: float = 10.0  # an editor/* request unanswered this long is a clear tool result
    mcp_servers: tuple[McpServerConfig, ...] = ()  # [mcp_servers.NAME] (server.mcp.config)
    hooks: tuple[HookSpec, ...] = ()  # [[hooks.EVENT]] (server.hooks.config)
    # File checkpoints: a previous content over the file cap, or one that would take the session's kept
    # contents over the session cap, is recorded as not restorable instead of being kept.
    checkpoint_max_file_bytes: int = 4 * 1024 * 1024
    checkpoint_max_session_bytes: int = 256 * 1024 * 1024
    # ``[models.NAME]``: named models a session may pick (createSession/updateSession ``model``); a session
    # without one uses ``provider``.
    models: dict[str, ProviderSettings] = field(default_factory=dict)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    approval_rules: ApprovalRules = field(
        default_factory=ApprovalRules
    )  # ``[approvals]``: commands allowed without asking
    web: WebSettings = field(default_factory=WebSettings)  # ``[web]``: web_fetch's hosts, web_search's provider
    # ``initializationOptions.unattended``: nobody can answer ``requestApproval`` on this connection (threadline
    # exec), so a call that would ask is refused at once and the model is told why (server.agent.approvals).
    unattended: bool = False
    daemon_idle_exit_seconds: float = 900.0  # [daemon] idle_exit_seconds: no client, no turn this long: it leaves

    def api_keys(self) -> tuple[str, ...]:
        """Every key configured (the default provider's, each named model's, the search provider's), for redaction
        and scrubbing."""
        keys = [self.provider.api_key, *(m.api_key for m in self.models.values()), self.web.search_api_key]
        return tuple(dict.fromkeys(k for k in keys if k))

    def tool_settings(self) -> ToolSettings:
        """What the built-in tools read, for their ``ToolContext``."""
        return ToolSettings(
            self.home,
            self.command_timeout_seconds,
            self.pattern_timeout_seconds,
            self.max_background_processes,
            self.web,
        )

    @property
    def database_path(self) -> Path:
        return self.home / "threadline.db"

    @property
    def artifacts_dir(self) -> Path:
        return self.home / "artifacts"

    @property
    def checkpoints_dir(self) -> Path:
        return self.home / "checkpoints"

    def with_initialization_options(self, options: InitializationOptions | None) -> Settings:
        """Apply a client's ``initializationOptions``, decoded and validated by the protocol types."""
        if options is None:
            return self
        given = options.provider or ProviderOptions()
        provider = self.provider
        for attr in ("base_url", "api_key", "model", "context_window_tokens", "kind"):
            value = getattr(given, attr)
            if value not in (None, ""):
                provider = replace(provider, **{attr: value})
        default_url = self.provider.base_url in (None, DEFAULT_BASE_URLS.get(self.provider.kind))
        if provider.kind != self.provider.kind and default_url:
            provider = replace(provider, base_url=given.base_url or DEFAULT_BASE_URLS.get(provider.kind))
        sandbox = replace(self.sandbox, mode=options.sandbox) if options.sandbox else self.sandbox
        return replace(
            self,
            provider=provider,
            approval_policy=options.approval_policy or self.approval_policy,
            sandbox=sandbox,
            unattended=bool(options.unattended),
        )


def load_settings(env: dict[str, str] | None = None) -> Settings:
    """Read config.toml under the home folder (``server.config_file``), then let the environment override it."""
    env = dict(os.environ if env is None else env)
    home = home_folder(env)
    config = read_config(home / "config.toml", warn=True)
    prov, ctx = config.provider, config.context
    kind = _kind(
        env.get("THREADLINE_PROVIDER") or prov.kind or "openai",
        "THREADLINE_PROVIDER" if env.get("THREADLINE_PROVIDER") else "provider.kind",
    )
    provider = ProviderSettings(
        kind=kind,
        base_url=env.get("THREADLINE_BASE_URL") or prov.base_url or prov.baseUrl or DEFAULT_BASE_URLS.get(kind),
        max_output_tokens=prov.max_output_tokens,
        thinking_budget_tokens=prov.thinking_budget_tokens,
        price=_price(prov.price),
        api_key=env.get("THREADLINE_API_KEY")
        or prov.api_key
        or prov.apiKey
        or (env.get(prov.api_key_env) if prov.api_key_env else None),
        model=env.get("THREADLINE_MODEL") or prov.model,
        context_window_tokens=_int(env.get("THREADLINE_CONTEXT_WINDOW"), "THREADLINE_CONTEXT_WINDOW")
        or prov.context_window_tokens
        or prov.contextWindowTokens,
    )
    models = _models(config.models, provider, env)
    policy = env.get("THREADLINE_APPROVAL_POLICY") or config.approval_policy or "ask"
    if policy not in APPROVAL_POLICIES:
        raise ConfigError(f"approval_policy must be one of {', '.join(APPROVAL_POLICIES)}, got {policy!r}")
    try:
        mcp_servers = parse_user_servers(config.mcp_servers)
    except McpConfigError as exc:
        raise ConfigError(f"{home / 'config.toml'}: mcp_servers: {exc}") from None
    try:
        hooks = parse_hooks(config.hooks, "user")
        rules = ApprovalRules.parse(config.approvals.commands, config.approvals.command_prefixes)
    except (HookConfigError, RuleError) as exc:
        raise ConfigError(f"{home / 'config.toml'}: {exc}") from None
    return Settings(
        home=home,
        approval_rules=rules,
        mcp_servers=mcp_servers,
        hooks=hooks,
        provider=provider,
        approval_policy=policy,
        threshold_ratio=_ratio(env.get("THREADLINE_THRESHOLD_RATIO") or _given(ctx.threshold_ratio, 0.8)),
        compact_target_ratio=_ratio(
            env.get("THREADLINE_COMPACT_TARGET_RATIO") or _given(ctx.compact_target_ratio, 0.5), "compact_target_ratio"
        ),
        keep_recent_tokens=_int(env.get("THREADLINE_KEEP_RECENT_TOKENS"), "THREADLINE_KEEP_RECENT_TOKENS")
        or _given(ctx.keep_recent_tokens, Settings.keep_recent_tokens),
        context_budget=None if ctx.budget in (None, "auto") else int(ctx.budget),
        keep_recent_outputs=_given(ctx.keep_recent_outputs, Settings.keep_recent_outputs),
        clear_at_least=_given(ctx.clear_at_least, Settings.clear_at_least),
        max_iterations=config.max_iterations or Settings.max_iterations,
        agents_max_parallel=config.agents.max_parallel or Settings.agents_max_parallel,
        command_timeout_seconds=config.command_timeout_seconds or Settings.command_timeout_seconds,
        max_background_processes=config.tools.max_background_processes or Settings.max_background_processes,
        max_message_bytes=_int(env.get("THREADLINE_MAX_MESSAGE_BYTES"), "THREADLINE_MAX_MESSAGE_BYTES")
        or Settings.max_message_bytes,
        provider_read_timeout_seconds=_int(env.get("THREADLINE_READ_TIMEOUT"), "THREADLINE_READ_TIMEOUT")
        or prov.read_timeout_seconds
        or Settings.provider_read_timeout_seconds,
        pattern_timeout_seconds=_int(env.get("THREADLINE_PATTERN_TIMEOUT"), "THREADLINE_PATTERN_TIMEOUT")
        or config.pattern_timeout_seconds
        or Settings.pattern_timeout_seconds,
        editor_timeout_seconds=_int(env.get("THREADLINE_EDITOR_TIMEOUT"), "THREADLINE_EDITOR_TIMEOUT")
        or Settings.editor_timeout_seconds,
        checkpoint_max_file_bytes=_int(
            env.get("THREADLINE_CHECKPOINT_MAX_FILE_BYTES"), "THREADLINE_CHECKPOINT_MAX_FILE_BYTES"
        )
        or _given(config.checkpoint_max_file_bytes, Settings.checkpoint_max_file_bytes),
        checkpoint_max_session_bytes=_int(
            env.get("THREADLINE_CHECKPOINT_MAX_SESSION_BYTES"), "THREADLINE_CHECKPOINT_MAX_SESSION_BYTES"
        )
        or _given(config.checkpoint_max_session_bytes, Settings.checkpoint_max_session_bytes),
        models=models,
        sandbox=_sandbox(config.sandbox, home, env),
        web=_web(config.web, home, env),
        daemon_idle_exit_seconds=_int(env.get("THREADLINE_DAEMON_IDLE_SECONDS"), "THREADLINE_DAEMON_IDLE_SECONDS")
        or config.daemon.idle_exit_seconds
        or Settings.daemon_idle_exit_seconds,
    )


def _sandbox(table: SandboxTable, home: Path, env: dict[str, str]) -> SandboxSettings:
    mode = env.get("THREADLINE_SANDBOX") or table.mode or DEFAULT_MODE
    if mode not in MODES:
        where = "THREADLINE_SANDBOX" if env.get("THREADLINE_SANDBOX") else "sandbox.mode"
        raise ConfigError(f"{where} must be one of {', '.join(MODES)}, got {mode!r}")
    # A configured list replaces the home-folder defaults; the data folder and the SSH agent stay hidden.
    deny = default_deny_read(home, env) if table.deny_read is None else (*table.deny_read, *always_hidden(home, env))
    return SandboxSettings(mode, bool(table.network), tuple(table.writable_roots), tuple(dict.fromkeys(deny)))


def _web(table: WebTable, home: Path, env: dict[str, str]) -> WebSettings:
    """``[web]``, with ``THREADLINE_WEB_ALLOW_PRIVATE`` (comma-separated ``host:port``), ``THREADLINE_WEB_SEARCH_PROVIDER``
    and ``THREADLINE_WEB_SEARCH_URL`` replacing what the file says."""
    private = env.get("THREADLINE_WEB_ALLOW_PRIVATE")
    provider = env.get("THREADLINE_WEB_SEARCH_PROVIDER") or table.search_provider
    key_env = table.api_key_env or BRAVE_KEY_ENV
    try:
        return parse_web(
            table.allow_hosts,
            table.deny_hosts,
            [p for p in private.split(",") if p.strip()] if private is not None else table.allow_private,
            provider,
            env.get("THREADLINE_WEB_SEARCH_URL") or table.search_url,
            (env.get(key_env) or None) if provider == "brave" else None,  # read only for the provider that uses it
            key_env,
        )
    except ValueError as exc:
        raise ConfigError(f"web.{exc} (in {home / 'config.toml'} or a THREADLINE_WEB_* variable)") from None


def _given(value: N | None, default: N) -> N:
    """config.toml's value when it has one (0 included), else the default."""
    return default if value is None else value


def _models(
    tables: dict[str, ModelTable], default: ProviderSettings, env: dict[str, str]
) -> dict[str, ProviderSettings]:
    """``[models.NAME]`` tables. A model of the default provider's kind without its own ``base_url`` shares the
    default's server and key; any other names its ``base_url`` (or the kind's public one) and its key, given
    as ``api_key`` or, better, ``api_key_env`` (the environment variable holding it)."""
    models: dict[str, ProviderSettings] = {}
    for name, table in tables.items():
        where = f"models.{name}"
        if name == "default":  # what clients (the ACP model picker) call the [provider] model
            raise ConfigError("models.default: the name 'default' is reserved for the [provider] model; pick another")
        if not table.model:
            raise ConfigError(f"{where}.model is required (the provider's model name)")
        kind = _kind(table.provider or table.kind or default.kind, f"{where}.provider")
        shares = kind == default.kind and not table.base_url
        key = table.api_key or (env.get(table.api_key_env) if table.api_key_env else None)
        models[name] = ProviderSettings(
            kind=kind,
            base_url=table.base_url or (default.base_url if shares else DEFAULT_BASE_URLS.get(kind)),
            api_key=key or (default.api_key if shares else None),
            model=table.model,
            context_window_tokens=table.context_window_tokens,
            max_output_tokens=table.max_output_tokens,
            thinking_budget_tokens=table.thinking_budget_tokens,
            price=_price(table.price),
        )
    return models


def _kind(value: Any, name: str) -> str:
    if value not in PROVIDER_KINDS:
        raise ConfigError(f"{name} must be one of {', '.join(repr(k) for k in PROVIDER_KINDS)}, got {value!r}")
    return str(value)


def _price(table: PriceTable | None) -> Price | None:
    if table is None:
        return None
    return Price(
        input=table.input,
        output=table.output,
        **{k: v for k in ("cached_input", "cache_write") if (v := getattr(table, k)) is not None},
    )


def _ratio(value: Any, name: str = "threshold_ratio") -> float:
    try:
        ratio = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number in (0, 1], got {value!r}") from None
    if not 0 < ratio <= 1:  # NaN fails this too
        raise ConfigError(f"{name} must be in (0, 1], got {ratio}")
    return ratio


def _int(value: Any, name: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a whole number, got {value!r}") from None
    if number <= 0:
        raise ConfigError(f"{name} must be positive, got {number}")
    return number
