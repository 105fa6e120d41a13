"""``[web]`` of config.toml as the web tools read it: host rules, the private endpoints the user opened, and the
search provider (``server.config`` builds it; README "Web tools").

A host rule is a host name (``docs.python.org``, exactly that host) or ``*.`` and a domain (``*.python.org``,
every host below it, not the domain itself). ``deny_hosts`` wins over everything, under every policy;
``allow_hosts`` lets ``web_fetch`` reach a host without asking.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from server.config_file import BRAVE_KEY_ENV
from server.tools.web.addresses import parse_endpoints

SEARCH_PROVIDERS = ("searxng", "brave")
BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"


@dataclass(frozen=True)
class WebSettings:
    allow_hosts: tuple[str, ...] = ()
    deny_hosts: tuple[str, ...] = ()
    allow_private: frozenset[str] = frozenset()  # ``host:port`` endpoints (``addresses.endpoint``)
    search_provider: str | None = None  # None: no web_search tool
    search_url: str | None = None
    search_api_key: str | None = field(default=None, repr=False)
    search_api_key_env: str = BRAVE_KEY_ENV

    def allowed_host(self, host: str) -> str | None:
        """The ``allow_hosts`` rule that lets ``web_fetch`` reach ``host`` unasked, or None."""
        return _matching(self.allow_hosts, host)

    def denied_host(self, host: str) -> str | None:
        """The ``deny_hosts`` rule that refuses ``host``, or None."""
        return _matching(self.deny_hosts, host)


def parse_web(
    allow_hosts: Iterable[str],
    deny_hosts: Iterable[str],
    allow_private: Iterable[str],
    search_provider: str | None,
    search_url: str | None,
    search_api_key: str | None = None,
    search_api_key_env: str | None = None,
) -> WebSettings:
    """The settings, checked; ``ValueError`` naming the first bad entry (``server.config`` says where it was)."""
    try:
        endpoints = parse_endpoints(allow_private)
    except ValueError as exc:
        raise ValueError(f"allow_private: {exc}") from None
    if search_provider is not None and search_provider not in SEARCH_PROVIDERS:
        raise ValueError(f"search_provider must be one of {', '.join(SEARCH_PROVIDERS)}, got {search_provider!r}")
    if search_provider == "searxng" and not search_url:
        raise ValueError("search_url is required with search_provider 'searxng' (the SearXNG server's address)")
    if search_url and not search_url.startswith(("http://", "https://")):
        raise ValueError(f"search_url must be an http:// or https:// URL, got {search_url!r}")
    return WebSettings(
        allow_hosts=_rules(allow_hosts, "allow_hosts"),
        deny_hosts=_rules(deny_hosts, "deny_hosts"),
        allow_private=endpoints,
        search_provider=search_provider,
        search_url=search_url or None,
        search_api_key=search_api_key,
        search_api_key_env=search_api_key_env or BRAVE_KEY_ENV,
    )


def _rules(entries: Iterable[str], where: str) -> tuple[str, ...]:
    rules = []
    for raw in entries:
        rule = raw.strip().lower().rstrip(".")
        name = rule.removeprefix("*.")
        if not name or any(c in name for c in "/:@ *") or "://" in raw:
            raise ValueError(f"{where}: {raw!r} is not a host name or *.domain (no scheme, port or path)")
        rules.append(rule)
    return tuple(rules)


def _matching(rules: tuple[str, ...], host: str) -> str | None:
    host = host.lower().rstrip(".")
    for rule in rules:
        if rule == host or (rule.startswith("*.") and host.endswith(rule[1:])):
            return rule
    return None
