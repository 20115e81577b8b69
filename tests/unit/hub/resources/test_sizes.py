"""Sizing a read's contents without holding a decoded or encoded copy (strict base64, UTF-8 length)."""

from __future__ import annotations

import base64
import os

import pytest

from host_bridge.hub.resources import reads as resources
from host_bridge.hub.resources.reads import _utf8_size, base64_size  # pyright: ignore[reportPrivateUsage]


@pytest.fixture(params=[4, 8, 2**16], ids=lambda size: f"slice{size}")
def slice_size(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    size: int = request.param
    monkeypatch.setattr(resources, "_SLICE", size)
    return size


@pytest.mark.parametrize("length", [0, 1, 2, 3, 4, 5, 47, 48, 1000])
@pytest.mark.requirement("C8")
def test_valid_base64_is_sized_as_its_decoded_bytes(slice_size: int, length: int) -> None:
    data = os.urandom(length)
    assert base64_size(base64.b64encode(data).decode()) == length


@pytest.mark.parametrize(
    "blob",
    [
        "AAE",  # unpadded
        "AAAA=",  # padding after a complete quantum
        "QQ==QUFB",  # padding in the middle, at a slice boundary
        "QQ=AQUFB",  # padding inside a quantum
        "Q===",
        "====",
        "QUFB\nQUFB",  # whitespace
        "QUFB QUFB",
        "QU-_",  # base64url alphabet
        "QUFé",  # not ASCII
        "not base64!!",
    ],
)
@pytest.mark.requirement("C22")
def test_invalid_base64_is_refused(slice_size: int, blob: str) -> None:
    with pytest.raises(ValueError):
        base64_size(blob)


@pytest.mark.parametrize(
    "text", ["", "plain ascii", "héllo wörld" * 10_000, "日本語🙂" * 30_000, "lone \ud800 surrogate"]
)
@pytest.mark.requirement("C8")
def test_the_utf8_size_of_a_text_counts_encoded_bytes(slice_size: int, text: str) -> None:
    assert _utf8_size(text) == len(text.encode("utf-8", "surrogatepass"))
