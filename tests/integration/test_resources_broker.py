"""The resource broker against real MCP servers (the SDK's low-level ``Server``), run in process.

Each test builds small servers, connects an ``mcp.Client`` to each (``mode="legacy"`` for the handshake era,
the default for 2026-07-28) and hands them to the broker through :class:`Sources`, a real ``ResourceSources``.
"""

from __future__ import annotations

import base64
import logging
import time
import warnings
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPDeprecationWarning, MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourcesListChanged, ResourceUpdated

from host_bridge.hub.errors import (
    InvalidRequestError,
    ResourceNotFoundError,
    ResourceTooLargeError,
    ServerNotRunningError,
    UnknownServerError,
    UpstreamError,
)
from host_bridge.hub.resources.broker import ResourceBroker
from host_bridge.hub.resources.models import ResourceSettings
from host_bridge.hub.upstream import is_modern_version

pytestmark = pytest.mark.anyio

Ctx = ServerRequestContext[Any, Any]
WAIT = 10.0


# A real ResourceSources and a recorder of the broker's callbacks.


class Sources:
    """The hub's side of the broker, over entered in-process clients."""

    def __init__(self) -> None:
        self.clients: dict[str, Client] = {}
        self.stopped: set[str] = set()
        self.errors: list[tuple[str, int]] = []

    def resource_servers(self) -> Sequence[str]:
        return [
            sid
            for sid, client in self.clients.items()
            if sid not in self.stopped and client.server_capabilities.resources is not None
        ]

    async def ready(self, server_id: str) -> None:
        if server_id not in self.clients:
            raise UnknownServerError(server_id)

    def client(self, server_id: str) -> Client:
        if server_id not in self.clients:
            raise UnknownServerError(server_id)
        if server_id in self.stopped:
            raise ServerNotRunningError(server_id, "stopped")
        return self.clients[server_id]

    def report_error(self, server_id: str, error: MCPError) -> None:
        self.errors.append((server_id, error.code))

    def protocol_version(self, server_id: str) -> str:
        return self.client(server_id).protocol_version


@dataclass
class Recorder:
    """What the broker reported; tests wait on conditions over it."""

    updated: list[tuple[str, str, int]] = field(default_factory=list[tuple[str, str, int]])
    """(server, uri, notifications seen so far) per on_updated call."""
    lists: list[str] = field(default_factory=list[str])
    notices: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    seen_updates: int = 0
    """resources/updated notifications the clients received."""
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def on_updated(self, server: str, uri: str) -> None:
        self.updated.append((server, uri, self.seen_updates))
        self._poke()

    def on_list_changed(self, server: str) -> None:
        self.lists.append(server)
        self._poke()

    def on_notice(self, server: str, message: str) -> None:
        self.notices.append((server, message))
        self._poke()

    def saw_update(self) -> None:
        self.seen_updates += 1
        self._poke()

    def _poke(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def until(self, condition: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT):
            while not condition():
                await self._changed.wait()

    def uris(self) -> list[tuple[str, str]]:
        return [(server, uri) for server, uri, _ in self.updated]


@dataclass
class Harness:
    broker: ResourceBroker
    sources: Sources
    events: Recorder


@asynccontextmanager
async def connect(
    servers: dict[str, Server[Any]],
    *,
    mode: Literal["legacy", "auto"] = "legacy",
    settings: ResourceSettings | None = None,
    clock: Callable[[], float] = time.monotonic,
    read_timeout: float | None = None,
) -> AsyncGenerator[Harness, None]:
    """Connect a client to each server (in this task), wire notifications to the broker like the hub does."""
    sources = Sources()
    events = Recorder()
    broker = ResourceBroker(
        sources,
        settings=settings or ResourceSettings(),
        on_updated=events.on_updated,
        on_list_changed=events.on_list_changed,
        on_notice=events.on_notice,
        clock=clock,
    )
    async with AsyncExitStack() as stack:
        for sid, server in servers.items():

            async def on_message(message: types.ServerNotification | Exception, sid: str = sid) -> None:
                if isinstance(message, types.ResourceUpdatedNotification):
                    events.saw_update()
                if not isinstance(message, Exception):
                    broker.upstream.notification(sid, message)

            client = Client(server, mode=mode, message_handler=on_message, read_timeout_seconds=read_timeout)
            sources.clients[sid] = await stack.enter_async_context(client)
            if not is_modern_version(client.protocol_version):
                # What the hub does for each connection (a 2026-07-28 one's listen loop is started by its test).
                await broker.upstream.connected(sid, client)
        yield Harness(broker, sources, events)


@asynccontextmanager
async def running(broker: ResourceBroker) -> AsyncGenerator[anyio.abc.TaskGroup, None]:
    """The broker running (its flusher and its background fetches), as the hub runs it."""
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(broker.run)
        await anyio.wait_all_tasks_blocked()  # its flusher waits, and lists are fetched in its task group
        yield tasks
        tasks.cancel_scope.cancel()


# Fixture servers.


def paged_server(name: str, count: int, page_size: int) -> Server[Any]:
    """``count`` resources ``<name>://r/<i>``, ``page_size`` per page, with integer cursors."""
    resources = [
        types.Resource(uri=f"{name}://r/{i}", name=f"{name} {i}", description=f"item {i} of {name}")
        for i in range(count)
    ]

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        start = int(params.cursor) if params and params.cursor else 0
        end = start + page_size
        return types.ListResourcesResult(
            resources=resources[start:end], next_cursor=str(end) if end < len(resources) else None
        )

    return Server(name, on_list_resources=list_resources)


def endless_server(name: str, *, repeat: bool) -> Server[Any]:
    """Always has a next page: the same cursor again (``repeat``) or always a new one."""

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        page = int(params.cursor.removeprefix("p")) if params and params.cursor else 0
        return types.ListResourcesResult(
            resources=[types.Resource(uri=f"{name}://page/{page}", name=f"page {page}")],
            next_cursor="p1" if repeat else f"p{page + 1}",
        )

    return Server(name, on_list_resources=list_resources)


def failing_server(name: str) -> Server[Any]:
    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        raise MCPError(types.INTERNAL_ERROR, "database is down")

    return Server(name, on_list_resources=list_resources)


def hostile_names_server(name: str) -> Server[Any]:
    resources = [
        types.Resource(
            uri="file:///etc/passwd",
            name="\x1b[31mpasswd\x1b[0m",
            title="invoice\u202egpj.exe",
            description="line one\nline two\x07",
        ),
        types.Resource(uri="javascript:alert(1)", name="\u2066click\u2069 me", mime_type="text/html"),
    ]

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources)

    return Server(name, on_list_resources=list_resources)


TEMPLATES = [
    types.ResourceTemplate(uri_template="repo://{owner}/{name}", name="repo", description="A \x1b[1mrepo\x1b[0m"),
    types.ResourceTemplate(uri_template="file:///{+path}", name="file", mime_type="text/plain"),
    types.ResourceTemplate(uri_template="search://q{?query,lang}", name="search", title="Search"),
    types.ResourceTemplate(uri_template="broken://{unclosed", name="broken"),
    types.ResourceTemplate(uri_template="prefix://{name:3}", name="prefix"),
    types.ResourceTemplate(
        uri_template="tags://{owner}{/path*}{;rev}{?tag*,q}{&page}{#frag}",
        name="\x1b[2Jtags",
        annotations=types.Annotations(audience=["user"], priority=0.5),
        icons=[types.Icon(src="https://example.invalid/tag.png", mime_type="image/png", sizes=["16x16"])],
    ),
]


def templates_server(name: str) -> Server[Any]:
    """Templates two per page, and completion that uses the context arguments."""

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def list_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        start = int(params.cursor) if params and params.cursor else 0
        end = start + 2
        return types.ListResourceTemplatesResult(
            resource_templates=TEMPLATES[start:end], next_cursor=str(end) if end < len(TEMPLATES) else None
        )

    async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        assert isinstance(params.ref, types.ResourceTemplateReference)
        context = params.context.arguments if params.context and params.context.arguments else {}
        if params.argument.value == "many":
            values = [f"v{i}" for i in range(150)]
            return types.CompleteResult(completion=types.Completion(values=values, total=150))
        owner = context.get("owner", "nobody")
        values = [f"{owner}/{n}" for n in ("alpha", "beta", "gamma") if n.startswith(params.argument.value)]
        return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))

    return Server(
        name, on_list_resources=list_resources, on_list_resource_templates=list_templates, on_completion=complete
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def read_server(name: str) -> Server[Any]:
    """Reads that behave per URI: text, blobs, oversize, bad base64, foreign contents, not found, errors."""

    def text(uri: str, body: str, mime: str | None = "text/plain") -> types.TextResourceContents:
        return types.TextResourceContents(uri=uri, text=body, mime_type=mime)

    def blob(uri: str, body: str, mime: str | None = "application/octet-stream") -> types.BlobResourceContents:
        return types.BlobResourceContents(uri=uri, blob=body, mime_type=mime)

    answers: dict[str, list[types.TextResourceContents | types.BlobResourceContents]] = {
        "t://text": [text("t://text", "héllo")],
        "t://blob": [blob("t://blob", b64(b"\x00\x01\xffPNG"))],
        "t://svg": [blob("t://svg", b64(b"<svg onload=alert(1)>"), "image/svg+xml")],
        "t://big-blob": [blob("t://big-blob", b64(b"x" * 2048))],
        "t://big-text": [text("t://big-text", "y" * 2048)],
        "t://wide-text": [text("t://wide-text", "é" * 600)],
        "t://bad64": [blob("t://bad64", "not base64!!")],
        "t://unpadded": [blob("t://unpadded", "AAE")],
        "t://mixed": [text("t://mixed", "mine"), text("file:///etc/passwd", "root:x:0:0"), text("t://other", "?")],
        "t://foreign": [text("t://elsewhere", "not for you")],
        "t://empty": [],
    }
    errors = {
        "t://missing": MCPError(-32002, "Resource not found", {"uri": "t://missing"}),
        "t://invalid": MCPError(types.INVALID_PARAMS, "Unknown resource"),
        "t://boom": MCPError(types.INTERNAL_ERROR, "disk \x1b[31mon fire"),
    }

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if params.uri == "t://slow":
            await anyio.sleep_forever()
        if params.uri in errors:
            raise errors[params.uri]
        if params.uri.startswith("repo://"):
            return types.ReadResourceResult(contents=[text(params.uri, f"repo at {params.uri}")])
        return types.ReadResourceResult(contents=answers[params.uri])

    return Server(name, on_list_resources=list_resources, on_read_resource=read_resource)


@dataclass
class SubscribeLog:
    """What a subscribing server saw, and its session to push notifications with."""

    subscribed: list[str] = field(default_factory=list[str])
    unsubscribed: list[str] = field(default_factory=list[str])
    session: ServerSession | None = None
    changed: anyio.Event = field(default_factory=anyio.Event)

    def poke(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def until(self, condition: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT):
            while not condition():
                await self.changed.wait()


def subscribing_server(name: str, log: SubscribeLog) -> Server[Any]:
    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="s://a", name="a")])

    async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        if params.uri == "s://refused":
            raise MCPError(types.INTERNAL_ERROR, "no subscriptions for you")
        log.session = ctx.session
        log.subscribed.append(params.uri)
        log.poke()
        return types.EmptyResult()

    async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        log.unsubscribed.append(params.uri)
        log.poke()
        return types.EmptyResult()

    return Server(
        name, on_list_resources=list_resources, on_subscribe_resource=subscribe, on_unsubscribe_resource=unsubscribe
    )


def updated(uri: str) -> types.ResourceUpdatedNotification:
    return types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))


# Listing.


async def walk(broker: ResourceBroker, **kwargs: Any) -> tuple[list[Any], list[str], int]:
    """Every page of a listing: items, warnings, number of calls."""
    items: list[Any] = []
    notes: list[str] = []
    cursor: str | None = None
    for calls in range(1, 100):
        page = await broker.list_resources(cursor=cursor, **kwargs)
        items.extend(page.items)
        notes.extend(page.warnings)
        cursor = page.next_cursor
        if cursor is None:
            return items, notes, calls
    raise AssertionError("the listing never ended")


async def test_three_servers_with_different_page_sizes_list_every_resource_exactly_once() -> None:
    servers = {
        "one": paged_server("one", 5, 1),
        "three": paged_server("three", 10, 3),
        "seven": paged_server("seven", 20, 7),
    }
    async with connect(servers) as h:
        first = await h.broker.list_resources()
        assert [item.server for item in first.items] == ["one"] + ["three"] * 3 + ["seven"] * 7
        items, notes, calls = await walk(h.broker)
    keys = [(item.server, item.uri) for item in items]
    assert len(keys) == len(set(keys)) == 35
    assert set(keys) == {
        (name, f"{name}://r/{i}") for name, n in (("one", 5), ("three", 10), ("seven", 20)) for i in range(n)
    }
    assert notes == []
    assert calls == 5


async def test_one_server_is_listed_alone_and_its_cursor_is_tied_to_that_listing() -> None:
    async with connect({"one": paged_server("one", 4, 3), "two": paged_server("two", 2, 1)}) as h:
        items, _, calls = await walk(h.broker, server="two")
        assert [item.uri for item in items] == ["two://r/0", "two://r/1"] and calls == 2
        page = await h.broker.list_resources(server="one")
        assert page.next_cursor is not None
        with pytest.raises(InvalidRequestError, match="different listing"):
            await h.broker.list_resources(server="two", cursor=page.next_cursor)
        with pytest.raises(InvalidRequestError, match="different listing"):
            await h.broker.list_resources(cursor=page.next_cursor)
        assert len(await h.broker.list_all("one")) == 4


async def test_a_tampered_cursor_is_refused() -> None:
    async with connect({"one": paged_server("one", 4, 1)}) as h:
        cursor = (await h.broker.list_resources()).next_cursor
        assert cursor is not None
        body, mac = cursor.split(".")
        flipped = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
        for bad in (f"{flipped}.{mac}", f"{body}.{mac[::-1]}", body, cursor + "x"):
            with pytest.raises(InvalidRequestError, match="cursor is invalid"):
                await h.broker.list_resources(cursor=bad)
        other = ResourceBroker(h.sources)
        with pytest.raises(InvalidRequestError, match="cursor is invalid"):
            await other.list_resources(cursor=cursor)


@pytest.mark.requirement("C16")
async def test_a_repeated_cursor_ends_that_servers_walk_with_a_warning() -> None:
    async with connect({"loop": endless_server("loop", repeat=True), "ok": paged_server("ok", 3, 1)}) as h:
        items, notes, calls = await walk(h.broker)
    assert notes == ["MCP server 'loop' repeated a pagination cursor; the list may be incomplete"]
    assert [item.uri for item in items if item.server == "ok"] == ["ok://r/0", "ok://r/1", "ok://r/2"]
    assert calls == 3


@pytest.mark.requirement("C16")
async def test_endless_new_cursors_stop_at_the_page_cap_with_a_warning() -> None:
    settings = ResourceSettings(max_pages=5)
    async with connect({"endless": endless_server("endless", repeat=False)}, settings=settings) as h:
        items, notes, calls = await walk(h.broker)
        assert calls == 5 and len(items) == 5
        assert notes == ["MCP server 'endless' has more than 5 pages of resources; the list may be incomplete"]
        assert len(await h.broker.list_all("endless")) == 5


async def test_a_failing_server_becomes_a_warning_and_the_others_are_listed() -> None:
    async with connect({"a": paged_server("a", 2, 5), "broken": failing_server("broken")}) as h:
        items, notes, _ = await walk(h.broker)
        assert [item.uri for item in items] == ["a://r/0", "a://r/1"]
        assert len(notes) == 1 and "'broken'" in notes[0] and "database is down" in notes[0]
        with pytest.raises(UpstreamError, match="database is down") as caught:
            await h.broker.list_resources(server="broken")
        assert caught.value.upstream_code == types.INTERNAL_ERROR


async def test_a_server_that_stops_mid_walk_becomes_a_warning() -> None:
    async with connect({"a": paged_server("a", 4, 1), "b": paged_server("b", 4, 1)}) as h:
        page = await h.broker.list_resources()
        h.sources.stopped.add("b")
        second = await h.broker.list_resources(cursor=page.next_cursor)
        assert [item.uri for item in second.items] == ["a://r/1"]
        assert second.warnings == (
            "MCP server 'b' is stopped; wait for it to start or restart it (its resources are not listed)",
        )
        with pytest.raises(ServerNotRunningError):
            await h.broker.list_resources(server="b")
        with pytest.raises(UnknownServerError):
            await h.broker.list_resources(server="nope")


async def test_query_filters_name_title_uri_and_description_ignoring_case() -> None:
    async with connect({"one": paged_server("one", 12, 100), "two": paged_server("two", 3, 100)}) as h:
        by_name = await h.broker.list_resources(query="ONE 1")
        assert [item.uri for item in by_name.items] == ["one://r/1", "one://r/10", "one://r/11"]
        by_uri = await h.broker.list_resources(query="TWO://R/2")
        assert [item.uri for item in by_uri.items] == ["two://r/2"]
        by_description = await h.broker.list_resources(query="item 0 of")
        assert [item.uri for item in by_description.items] == ["one://r/0", "two://r/0"]


@pytest.mark.requirement("C19")
async def test_labels_are_sanitized_and_uris_kept_verbatim() -> None:
    async with connect({"evil": hostile_names_server("evil")}) as h:
        page = await h.broker.list_resources()
    first, second = page.items
    assert (first.uri, first.name, first.title, first.description) == (
        "file:///etc/passwd",
        "passwd",
        "invoicegpj.exe",
        "line one line two",
    )
    assert (second.uri, second.name, second.mime_type) == ("javascript:alert(1)", "click me", "text/html")
    assert first.to_wire() == {
        "server": "evil",
        "uri": "file:///etc/passwd",
        "name": "passwd",
        "title": "invoicegpj.exe",
        "description": "line one line two",
    }


@pytest.mark.requirement("C14")
async def test_a_server_without_resources_is_left_out_quietly() -> None:
    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    async with connect({"tools": Server("tools", on_list_tools=list_tools), "a": paged_server("a", 1, 1)}) as h:
        page = await h.broker.list_resources()
        assert [item.uri for item in page.items] == ["a://r/0"] and page.warnings == ()
        assert (await h.broker.list_resources(server="tools")).items == ()
        assert await h.broker.list_templates(server="tools") == ()


# The kept lists (host_bridge.hub.resources.cache).


@dataclass
class PagesAsked:
    """The cursors a :func:`counting_server` was asked for, and a gate that holds its pages after the first."""

    cursors: list[str | None] = field(default_factory=list[str | None])
    gate: anyio.Event = field(default_factory=anyio.Event)


def counting_server(name: str, count: int, page_size: int, asked: PagesAsked, *, hold: bool = False) -> Server[Any]:
    """Like :func:`paged_server`, recording each page asked for; with ``hold``, pages after the first wait for
    ``asked.gate``."""

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        cursor = params.cursor if params else None
        asked.cursors.append(cursor)
        if hold and cursor is not None:
            await asked.gate.wait()
        start = int(cursor) if cursor else 0
        end = start + page_size
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=f"{name}://r/{i}", name=f"{name} {i}") for i in range(start, min(end, count))
            ],
            next_cursor=str(end) if end < count else None,
        )

    return Server(name, on_list_resources=list_resources)


async def test_concurrent_listings_share_one_walk_and_later_ones_ask_the_server_nothing() -> None:
    asked = PagesAsked()
    async with connect({"a": counting_server("a", 30, 10, asked)}) as h, running(h.broker):
        async with anyio.create_task_group() as tasks:
            for _ in range(3):
                tasks.start_soon(walk, h.broker)
        items, _, calls = await walk(h.broker, limit=1000)
        assert [item.uri for item in items] == [f"a://r/{i}" for i in range(30)] and calls == 1
    assert asked.cursors == [None, "10", "20"]


async def test_a_listing_with_a_limit_hands_out_what_is_fetched_without_waiting_for_the_rest() -> None:
    asked = PagesAsked()
    async with connect({"slow": counting_server("slow", 30, 10, asked, hold=True)}) as h, running(h.broker):
        with anyio.fail_after(WAIT):
            first = await h.broker.list_resources(limit=1000)
        assert [item.uri for item in first.items] == [f"slow://r/{i}" for i in range(10)]
        assert first.next_cursor is not None
        asked.gate.set()
        rest = await h.broker.list_resources(cursor=first.next_cursor, limit=1000)
        items = list(rest.items)
        cursor = rest.next_cursor
        while cursor is not None:
            page = await h.broker.list_resources(cursor=cursor, limit=1000)
            items.extend(page.items)
            cursor = page.next_cursor
        assert [item.uri for item in items] == [f"slow://r/{i}" for i in range(10, 30)]


async def test_a_limit_is_shared_out_between_servers_and_capped() -> None:
    servers = {"a": paged_server("a", 50, 50), "b": paged_server("b", 3, 50), "c": paged_server("c", 50, 50)}
    settings = ResourceSettings(max_page_resources=20)
    async with connect(servers, settings=settings) as h, running(h.broker):
        for server in servers:
            await h.broker.list_all(server)
        page = await h.broker.list_resources(limit=10)
        assert Counter(item.server for item in page.items) == {"a": 4, "b": 3, "c": 3}
        capped = await h.broker.list_resources(limit=1000)
        assert len(capped.items) == 20


async def test_a_list_change_makes_the_next_listing_ask_the_server_again() -> None:
    asked = PagesAsked()
    async with connect({"a": counting_server("a", 3, 10, asked)}) as h, running(h.broker):
        assert len((await walk(h.broker))[0]) == 3
        assert len((await walk(h.broker))[0]) == 3
        assert asked.cursors == [None]
        h.broker.upstream.notification("a", types.ResourceListChangedNotification())
        await h.events.until(lambda: h.events.lists == ["a"])
        assert len((await walk(h.broker))[0]) == 3
        assert asked.cursors == [None, None]


async def test_a_failed_fetch_is_kept_for_nobody_and_only_a_listing_lets_the_connection_judge_it() -> None:
    async with connect({"broken": failing_server("broken")}) as h, running(h.broker):
        h.broker.server_running("broken")
        await anyio.wait_all_tasks_blocked()
        assert h.sources.errors == [], "a list fetched ahead of time was judged by the connection"
        # Nothing of the failed fetch is kept: each listing asks the server, and its failure is judged.
        for count in (1, 2):
            with pytest.raises(UpstreamError, match="database is down"):
                await h.broker.list_resources(server="broken", limit=10)
            assert h.sources.errors == [("broken", types.INTERNAL_ERROR)] * count
        page = await h.broker.list_resources(limit=10)
        assert page.items == () and len(page.warnings) == 1 and "database is down" in page.warnings[0]


@pytest.mark.requirement("H5")
async def test_an_endless_list_is_kept_up_to_the_cap_on_resources_with_a_warning() -> None:
    settings = ResourceSettings(max_listed_resources=7)
    async with connect({"endless": endless_server("endless", repeat=False)}, settings=settings) as h:
        items, notes, _ = await walk(h.broker, limit=1000)
    assert [item.uri for item in items] == [f"endless://page/{i}" for i in range(7)]
    assert notes == ["MCP server 'endless' lists more than 7 resources; only the first 7 are listed"]


@pytest.mark.requirement("H5")
async def test_a_list_too_big_to_keep_is_cut_at_the_cap_on_bytes_with_a_warning() -> None:
    big = [types.Resource(uri=f"big://{i}", name=f"big {i}", description="x" * 1000) for i in range(100)]

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=big)

    settings = ResourceSettings(max_listed_bytes=10_000)
    async with connect({"big": Server("big", on_list_resources=list_resources)}, settings=settings) as h:
        items, notes, _ = await walk(h.broker, limit=1000)
    assert 5 <= len(items) < 10
    assert notes == [
        f"MCP server 'big' lists more than {10_000 / 2**20:g} MiB of resources; only the first {len(items)} are listed"
    ]


# Templates, completion, expansion.


async def test_templates_are_listed_across_pages_with_their_variables(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with connect({"t": templates_server("t"), "u": templates_server("u")}) as h:
        items = await h.broker.list_templates()
        only_t = await h.broker.list_templates(server="t")
    assert [(item.server, item.uri_template) for item in items] == [
        *(("t", template.uri_template) for template in TEMPLATES),
        *(("u", template.uri_template) for template in TEMPLATES),
    ]
    assert only_t == items[: len(TEMPLATES)]
    variables = {item.uri_template: item.variables for item in only_t}
    assert variables == {
        "repo://{owner}/{name}": ("owner", "name"),
        "file:///{+path}": ("path",),
        "search://q{?query,lang}": ("query", "lang"),
        "broken://{unclosed": (),
        "prefix://{name:3}": ("name",),
        "tags://{owner}{/path*}{;rev}{?tag*,q}{&page}{#frag}": ("owner", "path", "rev", "tag", "q", "page", "frag"),
    }
    assert only_t[0].description == "A repo"
    assert only_t[1].to_wire() == {
        "server": "t",
        "uriTemplate": "file:///{+path}",
        "name": "file",
        "mimeType": "text/plain",
        "variables": ["path"],
    }
    assert any("broken://{unclosed" in record.getMessage() for record in caplog.records)


async def test_template_annotations_and_icons_reach_the_editor_and_the_name_is_sanitized() -> None:
    async with connect({"t": templates_server("t")}) as h:
        items = await h.broker.list_templates(server="t")

    [tags] = [item for item in items if item.uri_template.startswith("tags://")]
    assert tags.to_wire() == {
        "server": "t",
        "uriTemplate": "tags://{owner}{/path*}{;rev}{?tag*,q}{&page}{#frag}",
        "name": "tags",
        "variables": ["owner", "path", "rev", "tag", "q", "page", "frag"],
        "annotations": {"audience": ["user"], "priority": 0.5},
        "icons": [{"src": "https://example.invalid/tag.png", "mimeType": "image/png", "sizes": ["16x16"]}],
    }


async def test_completion_passes_the_context_arguments_and_is_capped_at_100() -> None:
    async with connect({"t": templates_server("t"), "plain": paged_server("plain", 1, 1)}) as h:
        completion = await h.broker.complete("t", "repo://{owner}/{name}", "name", "b", {"owner": "me"})
        assert completion.values == ("me/beta",) and completion.total == 1 and completion.has_more is False
        many = await h.broker.complete("t", "repo://{owner}/{name}", "name", "many")
        assert len(many.values) == 100 and many.total == 150 and many.has_more is True
        assert (await h.broker.complete("plain", "x://{a}", "a", "")).values == ()


async def test_completion_passes_a_list_argument_to_the_server_comma_joined() -> None:
    async with connect({"t": templates_server("t")}) as h:
        completion = await h.broker.complete("t", "repo://{owner*}/{name}", "name", "a", {"owner": ["me", "you"]})

    assert completion.values == ("me,you/alpha",)


@pytest.mark.requirement("C19", "C20")
async def test_a_template_read_expands_and_goes_to_the_owning_server_only() -> None:
    async with connect({"r": read_server("r")}) as h:
        result = await h.broker.read(
            "r", uri_template="repo://{owner}/{name}", arguments={"owner": "../..", "name": "é?"}
        )
        assert result.uri == "repo://..%2F../%C3%A9%3F"
        assert result.contents[0].text == "repo at repo://..%2F../%C3%A9%3F"
        with pytest.raises(InvalidRequestError, match="'name'"):
            await h.broker.read("r", uri_template="repo://{owner}/{name}", arguments={"owner": "x"})
        with pytest.raises(InvalidRequestError, match="either"):
            await h.broker.read("r", "t://text", uri_template="repo://{owner}/{name}")


@pytest.mark.requirement("C20")
async def test_a_level_four_template_read_expands_lists_and_prefixes_and_reads_that_uri() -> None:
    async with connect({"r": read_server("r")}) as h:
        result = await h.broker.read(
            "r",
            uri_template="repo://{owner:2}{/path*}{?tag*}",
            arguments={"owner": "médor", "path": ["a b", ".."], "tag": ["x", "y&z"]},
        )

    assert result.uri == "repo://m%C3%A9/a%20b/..?tag=x&tag=y%26z"
    assert result.contents[0].text == f"repo at {result.uri}"


# Reading.

SMALL = ResourceSettings(max_read_bytes=1024)


@pytest.mark.requirement("C22")
async def test_text_and_blob_reads_pass_through() -> None:
    async with connect({"r": read_server("r")}, settings=SMALL) as h:
        text = await h.broker.read("r", "t://text")
        blob = await h.broker.read("r", "t://blob")
        svg = await h.broker.read("r", "t://svg")
    assert text.to_wire() == {
        "uri": "t://text",
        "contents": [{"uri": "t://text", "mimeType": "text/plain", "text": "héllo"}],
    }
    assert blob.contents[0].blob == b64(b"\x00\x01\xffPNG") and blob.contents[0].text is None
    assert svg.contents[0].mime_type == "image/svg+xml" and svg.contents[0].blob == b64(b"<svg onload=alert(1)>")


@pytest.mark.parametrize("uri", ["t://big-blob", "t://big-text", "t://wide-text"])
@pytest.mark.requirement("C8")
async def test_a_read_over_the_cap_is_too_large(uri: str) -> None:
    async with connect({"r": read_server("r")}, settings=SMALL) as h:
        with pytest.raises(ResourceTooLargeError, match=r"too large \(0\.0 MB, limit 0\.0 MB\)") as caught:
            await h.broker.read("r", uri)
    assert caught.value.data is not None and caught.value.data["limit"] == 1024
    assert caught.value.data["size"] > 1024


@pytest.mark.parametrize("uri", ["t://bad64", "t://unpadded"])
@pytest.mark.requirement("C22")
async def test_invalid_base64_is_an_upstream_error(uri: str) -> None:
    async with connect({"r": read_server("r")}) as h:
        with pytest.raises(UpstreamError, match=f"returned invalid base64 for {uri}"):
            await h.broker.read("r", uri)


@pytest.mark.requirement("C21")
async def test_contents_for_other_uris_are_dropped() -> None:
    async with connect({"r": read_server("r")}) as h:
        result = await h.broker.read("r", "t://mixed")
        assert [(c.uri, c.text) for c in result.contents] == [("t://mixed", "mine")]
        with pytest.raises(ResourceNotFoundError, match="no contents") as caught:
            await h.broker.read("r", "t://foreign")
        assert caught.value.data == {"uri": "t://foreign"}


@pytest.mark.parametrize("uri", ["t://missing", "t://invalid", "t://empty"])
@pytest.mark.requirement("C15")
async def test_not_found_errors_and_empty_contents_are_all_not_found(uri: str) -> None:
    async with connect({"r": read_server("r")}) as h:
        with pytest.raises(ResourceNotFoundError) as caught:
            await h.broker.read("r", uri)
    assert caught.value.code == -32002
    assert caught.value.data == {"uri": uri}
    if uri == "t://empty":
        assert "the server returned no contents" in caught.value.message


async def test_other_server_errors_keep_their_code_and_a_cleaned_message() -> None:
    async with connect({"r": read_server("r")}) as h:
        with pytest.raises(UpstreamError) as caught:
            await h.broker.read("r", "t://boom")
    assert caught.value.upstream_code == types.INTERNAL_ERROR
    assert "disk on fire" in caught.value.message and "\x1b" not in caught.value.message


@pytest.mark.requirement("C4")
async def test_a_read_that_is_not_answered_times_out_with_a_clear_message() -> None:
    async with connect({"r": read_server("r")}, read_timeout=0.2) as h:
        with pytest.raises(UpstreamError, match=r"did not answer within 0\.2 s") as caught:
            await h.broker.read("r", "t://slow")
    assert caught.value.upstream_code == types.REQUEST_TIMEOUT


@pytest.mark.requirement("C20")
async def test_a_uri_over_the_length_limit_is_not_sent() -> None:
    async with connect({"r": read_server("r")}, settings=ResourceSettings(max_uri_length=10)) as h:
        with pytest.raises(InvalidRequestError, match="over the limit of 10"):
            await h.broker.read("r", "t://" + "x" * 10)


# Subscriptions, handshake era.


async def test_subscribe_sends_resources_subscribe_without_leaking_the_deprecation_warning() -> None:
    log = SubscribeLog()
    async with connect({"s": subscribing_server("s", log)}) as h, running(h.broker):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await h.broker.subscribe("s", "s://a")
            await h.broker.unsubscribe("s", "s://a")
        assert not [w for w in caught if issubclass(w.category, MCPDeprecationWarning)]
        assert log.subscribed == ["s://a"] and log.unsubscribed == ["s://a"]
        assert h.broker.subscriptions("s") == frozenset()


@pytest.mark.requirement("C7")
async def test_updates_reach_the_editor_only_for_subscribed_uris() -> None:
    log = SubscribeLog()
    async with connect({"s": subscribing_server("s", log)}) as h, running(h.broker):
        await h.broker.subscribe("s", "s://a")
        assert log.session is not None
        h.broker.upstream.notification("ghost", updated("s://a"))
        await log.session.send_resource_updated("s://not-subscribed")
        await log.session.send_resource_updated("s://a")
        await h.events.until(lambda: h.events.seen_updates == 2 and len(h.events.updated) == 1)
        await log.session.send_resource_list_changed()
        await h.events.until(lambda: h.events.lists == ["s"])
        assert h.events.uris() == [("s", "s://a")]


async def test_a_server_without_subscribe_support_or_refusing_raises() -> None:
    log = SubscribeLog()
    async with connect({"plain": paged_server("plain", 1, 1), "s": subscribing_server("s", log)}) as h:
        with pytest.raises(UpstreamError, match="does not support subscriptions"):
            await h.broker.subscribe("plain", "plain://r/0")
        with pytest.raises(UpstreamError, match="no subscriptions for you"):
            await h.broker.subscribe("s", "s://refused")
        assert h.broker.subscriptions("s") == frozenset()


@pytest.mark.requirement("C6")
async def test_a_flood_of_updates_is_delivered_as_a_handful_of_calls() -> None:
    log = SubscribeLog()
    settings = ResourceSettings(update_interval=0.05, max_updates_per_second=1e9)
    async with connect({"s": subscribing_server("s", log)}, settings=settings) as h, running(h.broker):
        await h.broker.subscribe("s", "s://a")
        assert log.session is not None
        started = time.monotonic()
        for _ in range(10_000):
            await log.session.send_resource_updated("s://a")
        await h.events.until(lambda: any(seen == 10_000 for _, _, seen in h.events.updated))
        elapsed = time.monotonic() - started
    calls = len(h.events.updated)
    assert set(h.events.uris()) == {("s", "s://a")}
    assert 1 <= calls <= elapsed / settings.update_interval + 2
    assert calls < 200


@pytest.mark.requirement("C6")
async def test_an_update_rate_sustained_for_five_seconds_unsubscribes_with_a_notice() -> None:
    log = SubscribeLog()
    now = [100.0]
    settings = ResourceSettings(max_updates_per_second=200)
    async with (
        connect({"s": subscribing_server("s", log)}, settings=settings, clock=lambda: now[0]) as h,
        running(h.broker),
    ):
        await h.broker.subscribe("s", "s://a")
        for _ in range(10_000):  # a burst within one second is not a sustained rate
            h.broker.upstream.notification("s", updated("s://a"))
        for second in (200, 201, 202, 203):
            now[0] = second + 0.5
            for _ in range(201):
                h.broker.upstream.notification("s", updated("s://a"))
        assert h.broker.subscriptions("s") == {"s://a"} and h.events.notices == []
        now[0] = 204.5
        for _ in range(201):
            h.broker.upstream.notification("s", updated("s://a"))
        await log.until(lambda: log.unsubscribed == ["s://a"])
        await h.events.until(lambda: len(h.events.notices) == 1)
        assert h.events.notices == [("s", "MCP server 's' sent 201 updates/s for s://a; unsubscribed")]
        assert h.broker.subscriptions("s") == frozenset()


def disconnect(h: Harness, server_id: str) -> None:
    """What the hub does when a connection goes away."""
    h.broker.forget_server(server_id)
    h.broker.upstream.disconnected(server_id)


async def test_a_reconnect_resubscribes_and_reports_each_uri_as_updated() -> None:
    log = SubscribeLog()
    async with connect({"s": subscribing_server("s", log)}) as h, running(h.broker):
        await h.broker.subscribe("s", "s://a")
        await h.broker.subscribe("s", "s://b")
        disconnect(h, "s")
        assert h.broker.subscriptions("s") == {"s://a", "s://b"}
        h.broker.upstream.notification("s", updated("s://a"))
        await h.broker.upstream.connected("s", h.sources.client("s"))
        assert log.subscribed == ["s://a", "s://b", "s://a", "s://b"]
        await h.events.until(lambda: sorted(h.events.uris()) == [("s", "s://a"), ("s", "s://b")])
        await h.broker.unsubscribe("s", "s://a")
        disconnect(h, "s")
        await h.broker.unsubscribe("s", "s://b")
        assert h.broker.subscriptions("s") == frozenset()


# Subscriptions, 2026-07-28.


def listening_server(name: str, bus: InMemorySubscriptionBus) -> Server[Any]:
    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="n://a", name="a")])

    return Server(name, on_list_resources=list_resources, on_subscriptions_listen=ListenHandler(bus))


@pytest.mark.requirement("C7")
async def test_on_a_2026_connection_subscriptions_use_a_listen_stream() -> None:
    bus = InMemorySubscriptionBus()
    async with connect({"n": listening_server("n", bus)}, mode="auto") as h, running(h.broker) as tasks:
        client = h.sources.client("n")
        assert client.protocol_version == "2026-07-28"
        await tasks.start(h.broker.upstream.connected, "n", client)
        await h.broker.subscribe("n", "n://a")
        await bus.publish(ResourceUpdated(uri="n://other"))
        await bus.publish(ResourceUpdated(uri="n://a"))
        await h.events.until(lambda: h.events.uris() == [("n", "n://a")])
        await bus.publish(ResourcesListChanged())
        await h.events.until(lambda: h.events.lists == ["n"])
        await h.broker.unsubscribe("n", "n://a")
        await bus.publish(ResourceUpdated(uri="n://a"))
        await bus.publish(ResourcesListChanged())
        await h.events.until(lambda: h.events.lists == ["n", "n"])
        assert h.events.uris() == [("n", "n://a")]
        assert h.broker.subscriptions("n") == frozenset()


async def test_a_handshake_connection_returns_at_once_with_no_listen_stream_to_keep() -> None:
    log = SubscribeLog()
    async with connect({"s": subscribing_server("s", log)}) as h:
        with anyio.fail_after(WAIT):
            await h.broker.upstream.connected("s", h.sources.client("s"))
        async with anyio.create_task_group() as tasks:
            await tasks.start(h.broker.upstream.connected, "s", h.sources.client("s"))
