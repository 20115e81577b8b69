"""Which OAuth addresses host_bridge may reach and which it may open in a browser (docs/security.md D2).

A server controls every OAuth address host_bridge sees: its protected-resource metadata names the authorization
server, whose metadata names the endpoints and the page a browser is sent to. So each is checked before use:

* A browser only ever opens ``https://`` addresses, or ``http://`` on this machine's loopback (a local server under
  development, the conformance suite); never ``javascript:``, ``data:``, ``file:`` or anything else, never an address
  with a user name or password in it, never one with control characters.
* Requests (metadata, registration, tokens) go to ``https://`` addresses, or to ``http://`` loopback ones only when
  the MCP server itself is on the loopback; never to a link-local address (``169.254.169.254``, the cloud metadata
  service), and to a private (RFC 1918, unique-local) or loopback address only when the MCP server is in that same
  kind of network. Names are not resolved here: a public name that resolves to a private address is not caught.
"""

from __future__ import annotations

import ipaddress
from typing import Literal
from urllib.parse import urlsplit

Reach = Literal["loopback", "private", "link-local", "public", "name"]
"""What kind of host an address names: an IP literal's network, or a name (``name``)."""

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


class OAuthAddressError(ValueError):
    """An OAuth address host_bridge refuses to reach or open; the message names it and why."""


def host_reach(host: str) -> Reach:
    """The kind of network ``host`` (a name or an IP literal, brackets allowed) is in."""
    bare = host.strip("[]").lower()
    if bare in _LOOPBACK_NAMES or bare.endswith(".localhost"):
        return "loopback"
    try:
        address = ipaddress.ip_address(bare.split("%", 1)[0])
    except ValueError:
        return "name"
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_private or address.is_unspecified or address.is_reserved or address.is_multicast:
        return "private"
    return "public"


def _shown(url: str) -> str:
    return url if len(url) <= 200 else url[:200] + "…"


def _parts(url: str, what: str) -> tuple[str, str]:
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise OAuthAddressError(f"the {what} {_shown(url)!r} holds spaces or control characters; refused")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as error:
        raise OAuthAddressError(f"the {what} {_shown(url)!r} is not a valid address ({error}); refused") from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise OAuthAddressError(
            f"the {what} {_shown(url)!r} is not an https:// address; host_bridge opens and reaches only https:// "
            "OAuth addresses (http:// on this machine)"
        )
    if parts.username is not None or parts.password is not None:
        raise OAuthAddressError(f"the {what} {_shown(url)!r} carries a user name or password; refused")
    return parts.scheme.lower(), host


def check_browser_url(url: str) -> str:
    """``url`` if a browser may open it for a sign-in; else :class:`OAuthAddressError`."""
    scheme, host = _parts(url, "sign-in address")
    reach = host_reach(host)
    if scheme == "http" and reach != "loopback":
        raise OAuthAddressError(
            f"the sign-in address {_shown(url)!r} is not https://; host_bridge opens a plain http:// sign-in page only "
            "on this machine"
        )
    if reach == "link-local":
        raise OAuthAddressError(f"the sign-in address {_shown(url)!r} is a link-local address; refused")
    return url


def check_endpoint(url: str, server_url: str) -> None:
    """Raise :class:`OAuthAddressError` unless host_bridge may send an OAuth request to ``url`` for the MCP server
    at ``server_url`` (see the module docstring)."""
    scheme, host = _parts(url, "OAuth address")
    reach = host_reach(host)
    server_reach = host_reach(urlsplit(server_url).hostname or "")
    if reach == "link-local":
        raise OAuthAddressError(
            f"the OAuth address {_shown(url)!r} is a link-local address (a cloud metadata service?); refused"
        )
    if scheme == "http" and not (reach == "loopback" and server_reach == "loopback"):
        raise OAuthAddressError(
            f"the OAuth address {_shown(url)!r} is not https://; plain http:// is used only on this machine, for an "
            "MCP server on this machine"
        )
    if reach in ("loopback", "private") and server_reach != reach:
        raise OAuthAddressError(
            f"the OAuth address {_shown(url)!r} is in a {reach} network while the MCP server ({_shown(server_url)}) "
            "is not; refused"
        )
