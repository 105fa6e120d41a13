"""Which addresses a web fetch may connect to (SPEC B-WEB-1): pure, no I/O.

A fetch is made by the server, from inside the user's network, so a URL the model chose must not reach what only
that network can reach: loopback, the private ranges, link-local (where cloud metadata services answer), carrier
NAT, and anything else that is not globally routable. An IPv6 address that carries an IPv4 one (mapped,
compatible, 6to4, NAT64) is judged by the IPv4 address it leads to. The user may open one exact ``host:port``
(``[web] allow_private``), which is how tests serve pages from 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Named so the refusal says what the address is; anything else not globally routable is refused too.
_NAMED: tuple[tuple[str, str], ...] = (
    ("169.254.169.254/32", "a cloud metadata address"),
    ("168.63.129.16/32", "a cloud metadata address"),
    ("100.100.100.200/32", "a cloud metadata address"),
    ("fd00:ec2::254/128", "a cloud metadata address"),
    ("127.0.0.0/8", "a loopback address"),
    ("::1/128", "a loopback address"),
    ("10.0.0.0/8", "a private address"),
    ("172.16.0.0/12", "a private address"),
    ("192.168.0.0/16", "a private address"),
    ("fc00::/7", "a private address"),
    ("169.254.0.0/16", "a link-local address"),
    ("fe80::/10", "a link-local address"),
    ("100.64.0.0/10", "a carrier-grade NAT address"),
    ("0.0.0.0/8", "an unspecified address"),
    ("::/128", "an unspecified address"),
    ("224.0.0.0/4", "a multicast address"),
    ("ff00::/8", "a multicast address"),
)
NAMED_RANGES = tuple((ipaddress.ip_network(net), what) for net, what in _NAMED)
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


def refusal(address: str | Address) -> str | None:
    """Why a fetch may not connect to ``address`` ("a private address"...), or None when it may."""
    try:
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    except ValueError:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv6Address) and (inner := embedded_ipv4(ip)) is not None:
        why = refusal(inner)
        return f"{why} ({inner}) inside an IPv6 address" if why else None
    for net, what in NAMED_RANGES:
        if ip.version == net.version and ip in net:
            return what
    if not ip.is_global:
        return "a reserved address, not globally routable"
    return None


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one leads to (IPv4-mapped, IPv4-compatible, 6to4, NAT64), or None."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in net for net in _NAT64) or (int(ip) >> 32 == 0 and int(ip) > 1):  # ::a.b.c.d, not :: nor ::1
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def endpoint(host: str, port: int) -> str:
    """The ``host:port`` an ``allow_private`` entry names, normalised (lower case, IPv6 in brackets)."""
    host = host.strip("[]").lower().rstrip(".")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_endpoints(entries: Iterable[str]) -> frozenset[str]:
    """``allow_private`` entries as ``endpoint`` spells them; ``ValueError`` naming the first that is not
    ``host:port``."""
    parsed = set()
    for raw in entries:
        entry = raw.strip()
        host, sep, port = entry.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or "/" in host:
            raise ValueError(f"{raw!r} is not host:port (for example 127.0.0.1:8080 or [::1]:8080)")
        if ":" in host.strip("[]") and not (host.startswith("[") and host.endswith("]")):
            raise ValueError(f"{raw!r}: an IPv6 address is written in brackets, as [::1]:8080")
        parsed.add(endpoint(host, int(port)))
    return frozenset(parsed)
