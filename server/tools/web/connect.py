"""The one way a web fetch reaches the network: every TCP connection is checked where it is made (SPEC B-WEB-1).

httpx's transport is built here on httpcore's connection pool with our own network backend. To open a connection
the backend resolves the host once, refuses it unless every address it resolved to may be reached
(``addresses.refusal``, or the exact ``host:port`` is in ``allow_private``), then connects to one of those checked
addresses: nothing resolves the name a second time between the check and the connect, so a DNS answer that
changes (rebinding) cannot slip a private address in. TLS still verifies the certificate for the host name (SNI),
and the request still carries it in ``Host``, because httpcore takes both from the URL, not from the socket.

Redirects are not followed here; the caller follows them one hop at a time, and each hop's connection comes
through this check again. No proxy from the environment is used: a proxy would resolve the name itself.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from server.tools.web.addresses import endpoint, refusal

Resolver = Callable[[str, int], Awaitable[list[str]]]


class AddressRefused(Exception):
    """The host resolves to an address a fetch may not reach; nothing was connected."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the system's resolver gives for ``host``, in its order, each once."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class AddressGuard:
    """Resolves a host and says which of its addresses a connection may use (all, or it refuses)."""

    def __init__(self, allow_private: frozenset[str], resolver: Resolver | None = None):
        self.allow_private = allow_private
        self.resolver = resolver or system_resolver

    async def addresses(self, host: str, port: int) -> list[str]:
        """The checked addresses to connect to; ``AddressRefused`` when any of them may not be reached."""
        bare = host.strip("[]")
        try:
            found = [str(ipaddress.ip_address(bare))]  # a literal address: nothing to resolve
        except ValueError:
            try:
                found = await self.resolver(bare, port)
            except OSError as exc:
                raise httpcore.ConnectError(f"cannot resolve {bare}: {exc}") from None
        if not found:
            raise httpcore.ConnectError(f"{bare} resolves to no address")
        if endpoint(bare, port) in self.allow_private:
            return found
        for address in found:
            if why := refusal(address):
                shown = " is" if address == bare else f" resolves to {address}, which is"
                raise AddressRefused(
                    f"{bare}{shown} {why}: web_fetch does not reach private, loopback, link-local or metadata "
                    f"addresses (the user may allow exactly {endpoint(bare, port)} in [web] allow_private)"
                )
        return found


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, guard: AddressGuard):
        self.guard = guard
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        failure: Exception | None = None
        for address in await self.guard.addresses(host, port):
            try:
                return await self.inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:  # the next checked address, if any
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise AddressRefused("web_fetch does not connect to local sockets")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


_TIMEOUTS = (httpcore.TimeoutException,)
_CONNECT = (httpcore.ConnectError,)
_TRANSPORT = (
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
    httpcore.ProxyError,
    httpcore.ConnectionNotAvailable,
)


@contextmanager
def _as_httpx(request: httpx.Request) -> Iterator[None]:
    """httpcore's errors as the httpx ones the caller handles (httpx's own mapping is private to its transport)."""
    try:
        yield
    except _TIMEOUTS as exc:
        raise httpx.TimeoutException(str(exc) or type(exc).__name__, request=request) from exc
    except _CONNECT as exc:
        raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
    except _TRANSPORT as exc:
        raise httpx.TransportError(str(exc) or type(exc).__name__, request=request) from exc


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: Any, request: httpx.Request):
        self.stream, self.request = stream, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx(self.request):
            async for part in self.stream:
                yield part

    async def aclose(self) -> None:
        if hasattr(self.stream, "aclose"):
            await self.stream.aclose()


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport whose every connection is made by ``_GuardedBackend``."""

    def __init__(self, guard: AddressGuard, ssl_context: ssl.SSLContext | None = None):
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(),
            max_keepalive_connections=0,  # a fetch is a few requests; nothing waits on a kept connection
            network_backend=_GuardedBackend(guard),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx(request):
            response = await self._pool.handle_async_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream, request),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()
