"""The streamable HTTP transport: the SDK's client, with response bodies capped by their decoded size.

httpx decodes ``Content-Encoding`` while the SDK reads a JSON answer whole, so a few hundred KB of gzip can become
gigabytes in memory (docs/security.md D4). A response hook takes the decoding over for every body that is not an event
stream: it inflates gzip and deflate itself, a bounded piece at a time, and stops with :class:`BodyTooLargeError`
once the decoded bytes pass the cap, which the SDK reports as the failure of that one request. Event streams are left
to the SDK, which caps each event (1 MiB by default) as it decodes. Answers are then checked for their item counts
(:mod:`host_bridge.hub.limits`).
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client

from host_bridge.hub.limits import AnswerLimits, limited_streams

_PIECE = 2**20
"""Most bytes one inflate step may produce."""
_INFLATED = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class BodyRefusedError(httpx2.StreamError):
    """A response body was refused while it was read.

    A ``StreamError``, because that is what the SDK turns into the failure of the one request whose body it read.
    """


class BodyTooLargeError(BodyRefusedError):
    """A response body grew past the cap once decoded."""

    def __init__(self, server: str, limit: int) -> None:
        super().__init__(
            f"the MCP server {server!r} sent a response body of more than {limit} bytes once decoded "
            f"(the cap is {limit} bytes); it was refused while being read (the server must send smaller answers)"
        )


class _Inflater:
    """One ``Content-Encoding`` step (gzip or deflate, zlib-wrapped or raw), inflated in bounded pieces."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._unzip = zlib.decompressobj(_INFLATED[coding])
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            piece = self._unzip.decompress(data, _PIECE)
        except zlib.error:
            if self._coding != "deflate" or self._started:
                raise
            # "deflate" is often sent raw, without the zlib wrapper.
            self._unzip = zlib.decompressobj(-zlib.MAX_WBITS)
            piece = self._unzip.decompress(data, _PIECE)
        self._started = True
        while piece:
            yield piece
            piece = self._unzip.decompress(self._unzip.unconsumed_tail, _PIECE)

    def flush(self) -> Iterator[bytes]:
        yield from self.feed(b"")
        if tail := self._unzip.flush():
            yield tail


class _BoundedBody(httpx2.AsyncByteStream):
    """A response's raw stream, decoded through ``codings`` (outermost first) and cut off past ``limit`` bytes."""

    def __init__(self, raw: httpx2.AsyncByteStream, codings: list[str], limit: int, server: str) -> None:
        self._raw = raw
        self._codings = codings
        self._limit = limit
        self._server = server

    async def __aiter__(self) -> AsyncIterator[bytes]:
        steps = [_Inflater(coding) for coding in self._codings]
        total = 0
        try:
            async for chunk in self._raw:
                for piece in _through(steps, chunk):
                    total += len(piece)
                    if total > self._limit:
                        raise BodyTooLargeError(self._server, self._limit)
                    yield piece
            for piece in _flushed(steps):
                total += len(piece)
                if total > self._limit:
                    raise BodyTooLargeError(self._server, self._limit)
                yield piece
        except zlib.error as error:
            raise BodyRefusedError(
                f"the MCP server {self._server!r} sent a body that its Content-Encoding does not decode ({error})"
            ) from None

    async def aclose(self) -> None:
        await self._raw.aclose()


def _through(steps: list[_Inflater], data: bytes) -> Iterator[bytes]:
    if not steps:
        if data:
            yield data
        return
    for piece in steps[0].feed(data):
        yield from _through(steps[1:], piece)


def _flushed(steps: list[_Inflater]) -> Iterator[bytes]:
    for index, step in enumerate(steps):
        for piece in step.flush():
            yield from _through(steps[index + 1 :], piece)


def body_cap(server: str, limit: int) -> Any:
    """A response hook for ``httpx2.AsyncClient``: bodies other than event streams are decoded here and cut off
    past ``limit`` decoded bytes. Encodings other than gzip and deflate are left undecoded (the JSON then fails
    to parse), so no byte is ever decoded outside the cap."""

    async def cap(response: httpx2.Response) -> None:
        if response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            return
        values = response.headers.get_list("content-encoding", split_commas=True)
        codings = [value.strip().lower() for value in values if value.strip().lower() not in ("", "identity")]
        supported: list[str] = []
        for coding in reversed(codings):  # the last coding applied is the first to undo
            if coding not in _INFLATED:
                break
            supported.append(coding)
        if "content-encoding" in response.headers:
            del response.headers["content-encoding"]
        stream = response.stream
        if isinstance(stream, httpx2.AsyncByteStream):
            response.stream = _BoundedBody(stream, supported, limit, server)

    return cap


RequestHook = Callable[[httpx2.Request], Awaitable[None]]
"""An ``httpx`` request hook: raising refuses the request."""


@contextlib.asynccontextmanager
async def http_transport(
    url: str,
    headers: dict[str, str],
    timeout: float,
    *,
    server: str,
    max_body_bytes: int,
    limits: AnswerLimits,
    auth: Callable[[], Awaitable[httpx2.Auth]] | None = None,
    request_hooks: tuple[RequestHook, ...] = (),
) -> AsyncGenerator[Any]:
    """Streamable HTTP to ``url`` with our headers and timeouts, bodies capped at ``max_body_bytes`` decoded bytes
    and answers checked against ``limits``; the SDK does not close a client it was given, so this does.

    ``auth`` makes the ``httpx`` auth flow (the OAuth sign-in, :mod:`host_bridge.auth`) for this connection;
    ``request_hooks`` see every request, the auth flow's own included, before it is sent."""
    async with (
        httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(timeout, read=300.0),
            auth=await auth() if auth is not None else None,
            event_hooks={"request": list(request_hooks), "response": [body_cap(server, max_body_bytes)]},
        ) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield limited_streams(streams, limits)
