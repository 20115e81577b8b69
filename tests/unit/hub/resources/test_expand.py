"""Template expansion (C20) and cursor validation of the resource broker, without servers."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, MCPError

from host_bridge.hub.errors import InvalidRequestError, UnknownServerError
from host_bridge.hub.resources.broker import ResourceBroker
from host_bridge.hub.resources.models import ResourceSettings


class NoServers:
    """A ResourceSources with nothing configured."""

    def resource_servers(self) -> Sequence[str]:
        return ()

    async def ready(self, server_id: str) -> None:
        raise UnknownServerError(server_id)

    def client(self, server_id: str) -> Client:
        raise UnknownServerError(server_id)

    def report_error(self, server_id: str, error: MCPError) -> None:
        raise AssertionError("no request is ever sent")

    def protocol_version(self, server_id: str) -> str:
        raise UnknownServerError(server_id)


broker = ResourceBroker(NoServers())


@pytest.mark.parametrize(
    ("value", "expanded"),
    [
        ("../../etc/passwd", "x://..%2F..%2Fetc%2Fpasswd"),
        ("a%2Fb", "x://a%252Fb"),
        ("q?x=1#frag", "x://q%3Fx%3D1%23frag"),
        ("café", "x://caf%C3%A9"),
        ("line\nbreak\x00nul\x1b", "x://line%0Abreak%00nul%1B"),
        ("", "x://"),
    ],
)
@pytest.mark.requirement("C20")
def test_simple_expansion_encodes_everything_but_unreserved_characters(value: str, expanded: str) -> None:
    assert broker.expand("x://{v}", {"v": value}) == expanded


@pytest.mark.requirement("C20")
def test_reserved_expansion_keeps_reserved_characters_but_encodes_non_ascii_and_controls() -> None:
    assert broker.expand("file:///{+path}", {"path": "src/../a b?x#y"}) == "file:///src/../a%20b?x#y"
    assert broker.expand("file:///{+path}", {"path": "é\n"}) == "file:///%C3%A9%0A"


def test_level_three_and_four_operators_expand_with_string_values() -> None:
    assert broker.expand("x://s{?q,lang}", {"q": "a b", "lang": "en"}) == "x://s?q=a%20b&lang=en"
    assert broker.expand("x://{owner}/{name}{.ext}", {"owner": "me", "name": "r", "ext": "md"}) == "x://me/r.md"
    assert broker.expand("x://{name:3}{;rev}{#frag}", {"name": "réseau", "rev": "2", "frag": "a b"}) == (
        "x://r%C3%A9s;rev=2#a%20b"
    )


def test_list_arguments_expand_with_their_operator() -> None:
    uri = broker.expand("x://{owner}{/path*}{?tag*}", {"owner": "me", "path": ["a", "b c"], "tag": ["x", "y"]})
    assert uri == "x://me/a/b%20c?tag=x&tag=y"


def test_an_empty_list_for_a_required_variable_counts_as_missing() -> None:
    with pytest.raises(InvalidRequestError, match="'path'") as caught:
        broker.expand("x://{owner}{/path*}", {"owner": "me", "path": []})
    assert caught.value.data == {"uriTemplate": "x://{owner}{/path*}", "missing": ["path"]}


def test_a_list_for_a_prefixed_variable_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequestError, match="prefix modifier"):
        broker.expand("x://{name:3}", {"name": ["a", "b"]})


def test_a_template_over_the_sdk_length_limit_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequestError, match=r"not valid.*over the limit of 8192"):
        broker.expand("x://{v}" + "a" * 8192, {"v": "1"})


def test_a_missing_argument_names_the_variable() -> None:
    with pytest.raises(InvalidRequestError, match="'name'") as caught:
        broker.expand("repo://{owner}/{name}", {"owner": "me"})
    assert caught.value.data == {"uriTemplate": "repo://{owner}/{name}", "missing": ["name"]}


def test_trailing_query_variables_are_optional() -> None:
    assert broker.expand("x://s/{id}{?page}", {"id": "7"}) == "x://s/7"


def test_an_invalid_template_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequestError, match="not valid"):
        broker.expand("x://{unclosed", {})


@pytest.mark.requirement("C20")
def test_an_expansion_over_the_uri_length_limit_is_refused() -> None:
    small = ResourceBroker(NoServers(), settings=ResourceSettings(max_uri_length=20))
    assert small.expand("x://{v}", {"v": "a" * 16}) == "x://" + "a" * 16
    with pytest.raises(InvalidRequestError, match="over the limit of 20"):
        small.expand("x://{v}", {"v": "é" * 3})


@given(st.text())
@pytest.mark.requirement("C20")
def test_any_value_stays_one_segment_and_decodes_back(value: str) -> None:
    try:
        value.encode()
    except UnicodeEncodeError:
        return  # lone surrogates cannot be sent in UTF-8 JSON at all
    uri = broker.expand("x://{v}", {"v": value})
    rest = uri.removeprefix("x://")
    assert "/" not in rest
    assert "?" not in rest and "#" not in rest
    assert rest.isascii()
    assert unquote(rest, errors="strict") == value


@pytest.mark.anyio
@pytest.mark.parametrize("cursor", ["", "garbage", "a.b", "e30.AAAA", "!!!.???", "e30"])
async def test_a_cursor_the_broker_did_not_issue_is_an_invalid_request(cursor: str) -> None:
    with pytest.raises(InvalidRequestError, match="cursor is invalid"):
        await broker.list_resources(cursor=cursor)


@pytest.mark.anyio
async def test_with_no_resource_servers_the_listing_is_empty_and_final() -> None:
    page = await broker.list_resources()
    assert page.items == () and page.next_cursor is None and page.warnings == ()
