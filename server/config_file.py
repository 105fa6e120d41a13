"""``$THREADLINE_HOME/config.toml`` decoded once, by ``tomllib`` then ``msgspec``, into typed tables.

``server.config`` reads these structs (never the raw dicts) and lets the environment override them. A value of the
wrong type, a missing required field or an unknown one in a strict table is a ``ConfigError`` naming the setting
by its dotted path (``models.fast.price.output is required``).
"""

from __future__ import annotations

import math
import re
import tomllib
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import msgspec

T = TypeVar("T")
Positive = Annotated[int, msgspec.Meta(gt=0)]
Count = Annotated[int, msgspec.Meta(ge=0)]
PositiveNumber = Annotated[float, msgspec.Meta(gt=0)]
Money = Annotated[float, msgspec.Meta(ge=0)]  # USD per million tokens


class ConfigError(Exception):
    pass


def default_home() -> Path:
    import platformdirs  # only where THREADLINE_HOME is not set

    return Path(platformdirs.user_data_dir("threadline", appauthor=False))


def home_folder(env: Mapping[str, str]) -> Path:
    """``$THREADLINE_HOME``, else the platform's data folder: where config.toml and everything stored live."""
    return Path(env.get("THREADLINE_HOME") or default_home()).expanduser()


class PriceTable(msgspec.Struct, forbid_unknown_fields=True):
    """``{input, cached_input?, cache_write?, output}`` in USD per million tokens."""

    input: Money
    output: Money
    cached_input: Money | None = None
    cache_write: Money | None = None


class ProviderTable(msgspec.Struct):
    """``[provider]``: the default model. The camelCase spellings are accepted as the wire's are."""

    kind: str | None = None
    base_url: str | None = None
    baseUrl: str | None = None
    api_key: str | None = None
    apiKey: str | None = None
    api_key_env: str | None = None  # the environment variable holding the key
    model: str | None = None
    context_window_tokens: Positive | None = None
    contextWindowTokens: Positive | None = None
    max_output_tokens: Positive | None = None
    thinking_budget_tokens: Positive | None = None
    price: PriceTable | None = None
    read_timeout_seconds: PositiveNumber | None = None


class ModelTable(msgspec.Struct, forbid_unknown_fields=True):
    """``[models.NAME]``: a named model a session may pick."""

    model: str
    provider: str | None = None  # the kind; ``kind`` is accepted too
    kind: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    context_window_tokens: Positive | None = None
    max_output_tokens: Positive | None = None
    thinking_budget_tokens: Positive | None = None
    price: PriceTable | None = None


class ContextTable(msgspec.Struct):
    """``[context]``: the pipeline's budget (ratios are checked with the environment's, in ``server.config``)."""

    threshold_ratio: float | None = None
    compact_target_ratio: float | None = None
    keep_recent_tokens: Count | None = None
    budget: Positive | Literal["auto"] | None = None  # B-BUDGET-1: "auto" (the default) or tokens
    keep_recent_outputs: Count | None = None
    clear_at_least: Count | None = None


class AgentsTable(msgspec.Struct, forbid_unknown_fields=True):
    """``[agents]``: subagents (B-SUB-1)."""

    max_parallel: Positive | None = None  # ``task`` calls of one answer running at once


class ToolsTable(msgspec.Struct, forbid_unknown_fields=True):
    """``[tools]``: limits of the built-in tools."""

    max_background_processes: Positive | None = None  # background processes running at once per session


class SandboxTable(msgspec.Struct, forbid_unknown_fields=True):
    """``[sandbox]``: how commands are confined (B-SBX-1, docs/SANDBOX.md)."""

    mode: str | None = None  # workspace-write | read-only | off
    network: bool | None = None
    writable_roots: list[str] = msgspec.field(default_factory=list)
    deny_read: list[str] | None = None  # replaces the home-folder defaults; $THREADLINE_HOME stays denied


class ApprovalsTable(msgspec.Struct, forbid_unknown_fields=True):
    """``[approvals]``: commands allowed without asking (``server.security.approval_rules``), each a simple command."""

    commands: list[str] = msgspec.field(default_factory=list)  # exactly these commands
    command_prefixes: list[str] = msgspec.field(default_factory=list)  # these, or these followed by arguments


BRAVE_KEY_ENV = "BRAVE_API_KEY"  # where Brave search's key is read from when [web] api_key_env names no other


class WebTable(msgspec.Struct, forbid_unknown_fields=True):
    """``[web]``: web_fetch's host rules and private endpoints, web_search's provider (server.tools.web.settings)."""

    allow_hosts: list[str] = msgspec.field(default_factory=list)  # fetched without asking
    deny_hosts: list[str] = msgspec.field(default_factory=list)  # never fetched, under every policy
    allow_private: list[str] = msgspec.field(default_factory=list)  # host:port endpoints a fetch may reach (B-WEB-1)
    search_provider: str | None = None  # searxng | brave
    search_url: str | None = None
    api_key_env: str | None = None  # the environment variable holding Brave's key


class DaemonTable(msgspec.Struct, forbid_unknown_fields=True):
    """``[daemon]``: the per-user server ``threadline connect`` starts (B-DAEMON-1, docs/DAEMON.md)."""

    idle_exit_seconds: PositiveNumber | None = None  # with no client and no turn running this long, it leaves


class ConfigFile(msgspec.Struct):
    """The whole file. Unknown top-level keys are ignored (a newer or older Threadline may have written them)."""

    provider: ProviderTable = msgspec.field(default_factory=ProviderTable)
    context: ContextTable = msgspec.field(default_factory=ContextTable)
    models: dict[str, ModelTable] = msgspec.field(default_factory=dict)
    agents: AgentsTable = msgspec.field(default_factory=AgentsTable)
    tools: ToolsTable = msgspec.field(default_factory=ToolsTable)
    sandbox: SandboxTable = msgspec.field(default_factory=SandboxTable)
    approvals: ApprovalsTable = msgspec.field(default_factory=ApprovalsTable)
    web: WebTable = msgspec.field(default_factory=WebTable)
    daemon: DaemonTable = msgspec.field(default_factory=DaemonTable)
    mcp_servers: dict[str, Any] | None = None  # checked by server.mcp.config, which names each entry
    hooks: dict[str, Any] | None = None  # [[hooks.EVENT]], checked by server.hooks.config
    approval_policy: str | None = None
    max_iterations: Positive | None = None
    command_timeout_seconds: PositiveNumber | None = None
    pattern_timeout_seconds: PositiveNumber | None = None
    checkpoint_max_file_bytes: Count | None = None
    checkpoint_max_session_bytes: Count | None = None


def read_config(path: Path, warn: bool = False) -> ConfigFile:
    """The decoded file; an absent file is all defaults. With ``warn``, a key no table knows is named on stderr
    (``server.config_keys``)."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return ConfigFile()
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    # Each [models.NAME] on its own, so an error names the model (msgspec does not name dict keys)
    tables = data.pop("models", None) or {}
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}: models must be tables like [models.NAME]")
    if warn:
        from server.config_keys import unknown_keys, warn_unknown

        lenient: dict[str, type[msgspec.Struct]] = {"provider": ProviderTable, "context": ContextTable}
        warn_unknown(path, unknown_keys(data, lenient, ConfigFile))
    config = _convert(path, data, ConfigFile, "")
    models = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: models.{name} must be a table")
        models[str(name)] = _convert(path, table, ModelTable, f"models.{name}")
    config = msgspec.structs.replace(config, models=models)
    for where, price in [
        ("provider.price", config.provider.price),
        *((f"models.{name}.price", m.price) for name, m in config.models.items()),
    ]:
        for key in ("input", "output", "cached_input", "cache_write"):
            value = getattr(price, key, None)
            if value is not None and not math.isfinite(value):
                raise ConfigError(
                    f"{path}: {where}.{key} must be a non-negative number (USD per million tokens), got {value}"
                )
    return config


def _convert(path: Path, data: Any, typ: type[T], prefix: str) -> T:
    try:
        return msgspec.convert(data, typ)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {_explain(str(exc), prefix, typ)}") from None


_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$")


def _explain(message: str, prefix: str, typ: type) -> str:
    """msgspec's message in the file's own terms: the setting's dotted path first, then what is wrong."""
    match = _AT.match(message)
    assert match is not None
    what, inner = match["what"], (match["path"] or "").lstrip(".")
    where = ".".join(p for p in (prefix, inner) if p)
    if missing := re.fullmatch(r"Object missing required field `(\w+)`", what):
        field = f"{where}.{missing[1]}" if where else missing[1]
        return f"{field} is required" + (" (USD per million tokens)" if where.endswith("price") else "")
    if unknown := re.fullmatch(r"Object contains unknown field `(\w+)`", what):
        from server.config_keys import nearest

        fields = _fields_at(inner, typ)
        guess = nearest(unknown[1], fields)
        meant = f" (did you mean {guess}?)" if guess else ""
        return f"{where}: unknown field {unknown[1]}{meant}; known: {', '.join(fields)}"
    if re.fullmatch(r"Expected `float` >= 0\.0", what):
        return f"{where} must be a non-negative number (USD per million tokens)"
    if re.fullmatch(r"Expected `int` >= 0", what):
        return f"{where} must be a whole number >= 0"
    if bound := re.fullmatch(r"Expected `(int|float)` (?:>= 1|> 0(?:\.0)?)", what):
        return f"{where} must be a positive {'whole number' if bound[1] == 'int' else 'number'}"
    if typed := re.fullmatch(r"Expected `([^`]+)`, got `(\w+)`", what):
        return f"{where} must be a {_kind_of(typed[1])}, got a {_kind_of(typed[2])}"
    return f"{where}: {what}" if where else what


def _kind_of(msgspec_type: str) -> str:
    names = {
        "object": "table",
        "str": "string",
        "int": "whole number",
        "float": "number",
        "bool": "boolean",
        "array": "list",
        "null": "nothing",
    }
    return " or ".join(names.get(t.strip(), t.strip()) for t in msgspec_type.split("|") if t.strip() != "null")


def _fields_at(where: str, typ: Any) -> list[str]:
    """The fields of the table at a dotted path below ``typ`` (``price`` -> PriceTable's), for an unknown-field
    error."""
    for part in where.split(".") if where else []:
        if isinstance(typ, type) and issubclass(typ, msgspec.Struct):
            typ = {f.name: f.type for f in msgspec.structs.fields(typ)}.get(part)
        elif get_origin(typ) is dict:
            typ = get_args(typ)[1]
        typ = _unwrap(typ)
    if isinstance(typ, type) and issubclass(typ, msgspec.Struct):
        return [f.name for f in msgspec.structs.fields(typ)]
    return []


def _unwrap(typ: Any) -> Any:
    """``X | None`` and ``Annotated[X, ...]`` -> ``X``."""
    while get_origin(typ) is Annotated:
        typ = get_args(typ)[0]
    if get_origin(typ) in (Union, types.UnionType):
        typ = next((a for a in get_args(typ) if a is not type(None)), typ)
    return typ
