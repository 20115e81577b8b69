"""HTTP response bodies are decoded by host_bridge itself and cut off at a decoded-size cap (docs/security.md D4)."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator

import httpx2
import pytest

from host_bridge.hub.http_transport import BodyRefusedError, BodyTooLargeError, body_cap

pytestmark = [pytest.mark.anyio, pytest.mark.requirement("D4")]

TEXT = b'{"jsonrpc": "2.0", "id": 1, "result": {}}' + b" " * 5000


def deflate(data: bytes, raw: bool) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS if raw else zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


class Network(httpx2.AsyncByteStream):
    """A body as it arrives from a socket: in pieces, read once."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self._body), 4096):
            yield self._body[start : start + 4096]


async def fetch(body: bytes, headers: dict[str, str], limit: int = 2**20) -> httpx2.Response:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=headers, stream=Network(body))

    async with (
        httpx2.AsyncClient(
            transport=httpx2.MockTransport(answer), event_hooks={"response": [body_cap("web", limit)]}
        ) as client,
        client.stream("POST", "http://127.0.0.1/mcp") as response,
    ):
        await response.aread()
        return response


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("gzip", gzip.compress(TEXT)),
        ("deflate", deflate(TEXT, raw=False)),
        ("deflate", deflate(TEXT, raw=True)),
        ("gzip, gzip", gzip.compress(gzip.compress(TEXT))),
        ("identity", TEXT),
    ],
    ids=["gzip", "zlib-deflate", "raw-deflate", "twice", "identity"],
)
async def test_a_body_under_the_cap_arrives_decoded(encoding: str, body: bytes) -> None:
    response = await fetch(body, {"Content-Type": "application/json", "Content-Encoding": encoding})
    assert response.content == TEXT
    assert "content-encoding" not in response.headers


async def test_a_gzip_bomb_stops_at_the_cap_while_it_is_inflated() -> None:
    bomb = gzip.compress(b" " * 50 * 2**20)
    with pytest.raises(BodyTooLargeError, match="more than 100000 bytes once decoded"):
        await fetch(bomb, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, limit=100_000)


async def test_a_plain_body_over_the_cap_is_refused_too() -> None:
    with pytest.raises(BodyTooLargeError):
        await fetch(TEXT, {"Content-Type": "application/json"}, limit=1000)


async def test_an_encoding_it_cannot_decode_is_passed_on_undecoded_and_still_capped() -> None:
    packed = gzip.compress(TEXT)
    response = await fetch(b"br-bytes" + packed, {"Content-Type": "application/json", "Content-Encoding": "gzip, br"})
    assert response.content == b"br-bytes" + packed
    with pytest.raises(BodyTooLargeError):
        await fetch(b"x" * 2000, {"Content-Type": "application/json", "Content-Encoding": "br"}, limit=1000)


async def test_a_body_that_is_not_what_its_encoding_says_is_refused() -> None:
    with pytest.raises(BodyRefusedError, match="does not decode"):
        await fetch(b"not gzip at all", {"Content-Type": "application/json", "Content-Encoding": "gzip"})


async def test_an_event_stream_is_left_to_the_sdk_which_caps_each_event() -> None:
    events = b"data: " + b"y" * 5000 + b"\n\n"
    response = await fetch(gzip.compress(events), {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, 10)
    assert response.content == events
