"""The loopback redirect that completes a sign-in (RFC 8252 §7.3): a one-use HTTP listener on ``127.0.0.1``.

The authorization server sends the browser back to ``http://127.0.0.1:PORT/callback?code=…&state=…``. The listener
is bound before the browser is sent to sign in (so the redirect cannot arrive before it), accepts connections only
while a sign-in waits, answers only a ``GET`` of its own path whose ``state`` is the one it waits for (anything else
on this machine that connects gets a 400 and changes nothing), and shows a page saying what happened. The address
it answers never echoes the code, and the page asks the browser not to send it on (``Referrer-Policy``).
"""

from __future__ import annotations

import html
import logging
import socket
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
from mcp.shared.auth import AuthorizationCodeResult

logger = logging.getLogger(__name__)

LOOPBACK_HOST = "127.0.0.1"
CALLBACK_PATH = "/callback"
_MAX_REQUEST = 16 * 1024
_READ_SECONDS = 10.0


class SignInError(Exception):
    """A sign-in that did not complete; the message says why and what to do."""


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK_HOST, 0))
        return int(probe.getsockname()[1])


def redirect_uri(port: int) -> str:
    """The redirect URI of a loopback listener on ``port``."""
    return f"http://{LOOPBACK_HOST}:{port}{CALLBACK_PATH}"


class LoopbackRedirect:
    """A listener for one sign-in's redirect back; :meth:`open`, then :meth:`wait`, then :meth:`close`."""

    def __init__(self, port: int, server_label: str) -> None:
        self.port = port
        """The port it listens on."""
        self._label = server_label
        self._listener: anyio.abc.SocketListener | None = None

    @property
    def redirect_uri(self) -> str:
        """Where the authorization server sends the browser back."""
        return redirect_uri(self.port)

    async def open(self) -> None:
        """Bind the port (raises :class:`SignInError` when something else holds it)."""
        try:
            listener = await anyio.create_tcp_listener(local_host=LOOPBACK_HOST, local_port=self.port, backlog=8)
        except OSError as error:
            raise SignInError(
                f"cannot listen on {LOOPBACK_HOST}:{self.port} for the sign-in's redirect back "
                f'({error.strerror or error}); close what uses that port, or set another "callbackPort" in the '
                'server\'s "oauth" settings'
            ) from None
        first = listener.listeners[0]
        assert isinstance(first, anyio.abc.SocketListener)
        self._listener = first

    async def wait(self, state: str) -> AuthorizationCodeResult:
        """The authorization response carrying ``state``; raises :class:`SignInError` when the server refused."""
        assert self._listener is not None, "open() first"
        while True:
            stream = await self._listener.accept()
            async with stream:
                with anyio.move_on_after(_READ_SECONDS):
                    result = await self._answer(stream, state)
                    if result is not None:
                        return result

    async def close(self) -> None:
        """Stop listening."""
        if self._listener is not None:
            listener, self._listener = self._listener, None
            await listener.aclose()

    async def _answer(self, stream: anyio.abc.SocketStream, state: str) -> AuthorizationCodeResult | None:
        head = b""
        while b"\r\n\r\n" not in head:
            try:
                chunk = await stream.receive(4096)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return None
            head += chunk
            if len(head) > _MAX_REQUEST:
                await _respond(stream, 431, "Request too large", "This request is too large.")
                return None
        method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
        target = rest.rsplit(" ", 1)[0]
        parts = urlsplit(target)
        if method != "GET" or parts.path != CALLBACK_PATH:
            await _respond(stream, 404, "Not found", "Nothing is here.")
            return None
        query = {name: values[0] for name, values in parse_qs(parts.query, keep_blank_values=True).items()}
        if query.get("state") != state:
            await _respond(
                stream,
                400,
                "Not this sign-in",
                "This is not the sign-in MCP Host Bridge is waiting for; nothing changed.",
            )
            return None
        label = html.escape(self._label)
        if "error" in query:
            reason = query.get("error_description") or query["error"]
            await _respond(
                stream, 200, "Sign-in refused", f"The sign-in to {label} was refused: {html.escape(reason)}."
            )
            raise SignInError(f"the authorization server refused the sign-in ({query['error']}: {reason})")
        await _respond(
            stream, 200, "Signed in", f"MCP Host Bridge received your sign-in to {label}. You can close this tab."
        )
        return AuthorizationCodeResult(code=query.get("code") or "", state=state, iss=query.get("iss"))


async def _respond(stream: anyio.abc.SocketStream, status: int, title: str, text: str) -> None:
    body = (
        f'<!doctype html><html><head><meta charset="utf-8"><title>MCP Host Bridge: {title}</title></head>'
        f"<body><h1>MCP Host Bridge</h1><p>{text}</p></body></html>"
    ).encode()
    head = (
        f"HTTP/1.1 {status} {title}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
        "Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n"
    ).encode()
    try:
        await stream.send(head + body)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        logger.debug("the browser closed the sign-in connection before the page was sent")
