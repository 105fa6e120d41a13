"""Secrets never reach a log line, at any level: a filter on the log handlers masks every known secret.

The provider key can arrive from the environment, ``config.toml``, ``initializationOptions`` (which pygls logs
whole at DEBUG) or inside the base URL (``https://user:KEY@host``); each is registered here as soon as it is
known. ``display_url`` is the form of a base URL that error messages and notices may show.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
_MIN_SECRET = 4  # shorter strings would mask ordinary text


class SecretFilter(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        text = record.getMessage()
        masked = mask(text, self.secrets)
        if masked != text or record.exc_info or record.exc_text:
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.msg, record.args = masked, None
            if record.exc_text:
                record.exc_text = mask(record.exc_text, self.secrets)
            record.exc_info = None
        return True


_FILTER = SecretFilter()


def install(handlers: list[logging.Handler] | None = None) -> None:
    """Put the filter on every root handler (handler filters see records from every logger)."""
    for handler in handlers if handlers is not None else logging.getLogger().handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)


def add_secret(secret: str | None) -> None:
    if secret and len(secret) >= _MIN_SECRET:
        _FILTER.secrets.add(secret)


def add_url_secrets(url: str | None) -> None:
    """The password (and a user name that may be a token) of ``url``'s userinfo."""
    if not url:
        return
    parts = urlsplit(url)
    add_secret(parts.password)
    if parts.username and parts.password is None:
        add_secret(parts.username)


def mask(text: str, secrets: set[str] | frozenset[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def display_url(url: str) -> str:
    """``url`` without its userinfo, query or fragment: what a message may say about where it connected."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<the configured base URL>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
