"""The hub's one book of upstream state against real MCP servers (the SDK's low-level ``Server``), run in process.

Two clients hold subscriptions and log levels in the same book, as the broker and the gateway do in the sidecar; what
the server is asked, and what each holder hears, is checked on the server's side and the clients'.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPDeprecationWarning
from mcp.server import Server, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated, ToolsListChanged

from host_bridge.hub.upstream import Holder, Upstream

pytestmark = pytest.mark.anyio

Ctx = ServerRequestContext[Any, Any]
WAIT = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Seen:
    """What a server was asked, and its session to push notifications with."""

    subscribed: list[str] = field(default_factory=list[str])
    unsubscribed: list[str] = field(default_factory=list[str])
    levels: list[str] = field(default_factory=list[str])
    session: ServerSession | None = None


def handshake_server(seen: Seen) -> Server[Any]:
    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        seen.session = ctx.session
        seen.subscribed.append(params.uri)
        return types.EmptyResult()

    async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        seen.unsubscribed.append(params.uri)
        return types.EmptyResult()

    async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        seen.levels.append(params.level)
        return types.EmptyResult()

    with warnings.catch_warnings():
        # A handshake-era server offers logging, which the SDK marks deprecated for 2026-07-28.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return Server(  # pyright: ignore[reportDeprecated]
            "handshake",
            on_list_resources=list_resources,
            on_subscribe_resource=subscribe,
            on_unsubscribe_resource=unsubscribe,
            on_set_logging_level=set_level,
        )


class Party:
    """A client of the book, recording what it is told (the broker or the gateway in the sidecar)."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, str, frozenset[Holder]]] = []
        self.notifications: list[tuple[str, str]] = []
        self.restarts: list[str] = []
        self.lost: list[tuple[str, tuple[str, ...], str]] = []
        self._arrived = anyio.Event()

    def resource_updated(self, server_id: str, uri: str, holders: frozenset[Holder]) -> None:
        self.updates.append((server_id, uri, holders))
        self._poke()

    def server_notification(self, server_id: str, message: types.ServerNotification) -> None:
        self.notifications.append((server_id, message.method))
        self._poke()

    def server_restarted(self, server_id: str) -> None:
        self.restarts.append(server_id)

    def subscriptions_lost(self, server_id: str, uris: Sequence[str], reason: str) -> None:
        self.lost.append((server_id, tuple(uris), reason))

    def listening(self, server_id: str) -> None: ...

    def _poke(self) -> None:
        self._arrived.set()
        self._arrived = anyio.Event()

    async def until(self, condition: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT):
            while not condition():
                await self._arrived.wait()


class Live:
    """The hub's side: the live client of each server."""

    def __init__(self) -> None:
        self.clients: dict[str, Client] = {}

    def client(self, server_id: str) -> Client:
        return self.clients[server_id]


@asynccontextmanager
async def connected(
    server: Server[Any], *, mode: Literal["legacy", "auto"] = "legacy"
) -> AsyncGenerator[tuple[Upstream, Party, Party, Client]]:
    live = Live()
    book = Upstream(live)
    editor, gateway = Party(), Party()
    book.attach(editor)
    book.attach(gateway)

    async def on_message(message: types.ServerNotification | Exception) -> None:
        if not isinstance(message, Exception):
            book.notification("s", message)

    async with Client(server, mode=mode, message_handler=on_message) as client:
        live.clients["s"] = client
        yield book, editor, gateway, client


def updated(uri: str) -> types.ResourceUpdatedNotification:
    return types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))


async def test_a_uri_held_by_the_editor_and_two_agents_is_subscribed_once_and_unsubscribed_after_the_last() -> None:
    seen = Seen()
    async with connected(handshake_server(seen)) as (book, editor, gateway, client):
        await book.connected("s", client)
        await book.subscribe(editor, "editor", "s", "s://a")
        await book.subscribe(gateway, "agent 1", "s", "s://a")
        await book.subscribe(gateway, "agent 2", "s", "s://a")
        await book.subscribe(gateway, "agent 2", "s", "s://b")
        assert seen.subscribed == ["s://a", "s://b"]
        assert book.held("s") == {"s://a", "s://b"} and book.held("s", editor) == {"s://a"}
        assert book.count(gateway, "agent 2") == 2
        book.notification("s", updated("s://a"))
        book.notification("s", updated("s://elsewhere"))
        assert editor.updates == [("s", "s://a", frozenset({"editor"}))]
        assert gateway.updates == [("s", "s://a", frozenset({"agent 1", "agent 2"}))]
        await book.unsubscribe(editor, "editor", "s", "s://a")
        await book.unsubscribe(gateway, "agent 1", "s", "s://a")
        await book.unsubscribe(gateway, "agent 1", "s", "s://a")  # not held any more: nothing happens
        assert seen.unsubscribed == []
        await book.release(gateway, "agent 2")
        assert sorted(seen.unsubscribed) == ["s://a", "s://b"]
        assert book.held("s") == frozenset()


async def test_a_reconnect_subscribes_everything_held_in_one_pass_and_tells_every_holder_and_client() -> None:
    seen = Seen()
    async with connected(handshake_server(seen)) as (book, editor, gateway, client):
        await book.connected("s", client)
        assert book.generation("s") == 1
        await book.subscribe(editor, "editor", "s", "s://a")
        await book.subscribe(gateway, "agent", "s", "s://a")
        await book.subscribe(gateway, "agent", "s", "s://b")
        book.disconnected("s")
        book.notification("s", updated("s://a"))  # from a connection that is gone: dropped
        assert editor.updates == [] and gateway.updates == []
        await book.connected("s", client)
        assert book.generation("s") == 2
        assert seen.subscribed == ["s://a", "s://b", "s://a", "s://b"]
        assert editor.updates == [("s", "s://a", frozenset({"editor"}))]
        assert sorted(u[1] for u in gateway.updates) == ["s://a", "s://b"]
        assert editor.restarts == ["s"] and gateway.restarts == ["s"]


async def test_the_server_is_set_to_the_most_verbose_level_any_holder_asked_for_and_again_after_a_restart() -> None:
    seen = Seen()
    async with connected(handshake_server(seen)) as (book, _editor, _gateway, client):
        await book.connected("s", client)
        with warnings.catch_warnings():
            warnings.simplefilter("error", MCPDeprecationWarning)
            await book.set_log_level("agent 1", "s", "warning")
            await book.set_log_level("agent 2", "s", "error")
            await book.set_log_level("agent 2", "s", "debug")
        assert seen.levels == ["warning", "debug"]
        assert book.log_level("agent 1", "s") == "warning" and book.merged_level("s") == "debug"
        await book.release(_gateway, "agent 2")
        assert seen.levels == ["warning", "debug", "warning"]
        book.disconnected("s")
        await book.connected("s", client)
        assert seen.levels == ["warning", "debug", "warning", "warning"]


async def test_on_a_2026_connection_one_listen_stream_carries_every_holders_uris_and_the_list_changes() -> None:
    bus = InMemorySubscriptionBus()

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    server: Server[Any] = Server(
        "modern",
        on_list_tools=list_tools,
        on_list_resources=list_resources,
        on_subscriptions_listen=ListenHandler(bus),
    )
    async with connected(server, mode="auto") as (book, editor, gateway, client), anyio.create_task_group() as tasks:
        assert client.protocol_version == "2026-07-28"
        await tasks.start(book.connected, "s", client)
        await book.subscribe(editor, "editor", "s", "n://a")
        await book.subscribe(gateway, "agent", "s", "n://b")
        await bus.publish(ResourceUpdated(uri="n://b"))
        await bus.publish(ToolsListChanged())
        await gateway.until(lambda: ("s", "notifications/tools/list_changed") in gateway.notifications)
        assert gateway.updates == [("s", "n://b", frozenset({"agent"}))]
        assert editor.updates == [] and ("s", "notifications/tools/list_changed") in editor.notifications
        await book.release(gateway, "agent")
        await bus.publish(ResourceUpdated(uri="n://b"))
        await bus.publish(ResourceUpdated(uri="n://a"))
        await editor.until(lambda: bool(editor.updates))
        assert editor.updates == [("s", "n://a", frozenset({"editor"}))]
        assert len(gateway.updates) == 1
        tasks.cancel_scope.cancel()
