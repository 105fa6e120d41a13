"""A provider on plain http (a local model server) skips loading the CA bundle at start-up, and stays safe:
its client's TLS context, which it never needs, trusts no certificate, so any TLS through it fails closed."""

from __future__ import annotations

import ssl

import pytest

from server.providers.http import tls_for


def test_a_plain_http_provider_gets_a_tls_context_that_verifies_and_trusts_nothing(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    context = tls_for("http://127.0.0.1:8080/v1")
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.get_ca_certs() == [] and context.cert_store_stats()["x509_ca"] == 0


@pytest.mark.parametrize("proxy", [None, "HTTPS_PROXY", "http_proxy"])
def test_https_and_anything_behind_a_proxy_keep_httpx_default_verification(monkeypatch, proxy):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert tls_for("https://api.example.com/v1") is True
    if proxy:
        monkeypatch.setenv(proxy, "https://proxy.example:3128")
        assert tls_for("http://127.0.0.1:8080/v1") is True
