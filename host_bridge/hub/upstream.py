"""One book of what the hub's servers are asked to hold for their users: subscriptions, the log level, restarts.

The editor (through :class:`~host_bridge.hub.resources.broker.ResourceBroker`) and agents (through the gateway) use
the same running servers. What each server is asked to keep for them is recorded here once, by *holder*:

- **Subscriptions**, reference-counted per ``(server, uri)``: the server is subscribed when the first holder subscribes
  and unsubscribed when the last one lets go; every update reaches exactly the holders of its URI.
- **One resubscribe pass after a (re)connect**: every held URI is subscribed again and each holder is told it may have
  missed updates; the clients are told the server restarted (:attr:`Upstream.generation` counts its starts).
- **The log level**: the most verbose level any holder asked for is what the server is set to, again after a restart.

The book's users are its *clients* (:class:`UpstreamClient`), two equal ones in the sidecar: the broker holds the
editor's subscriptions under one holder, the gateway under one holder per agent session. Every other notification of
a server reaches every client the same way.

Handshake-era servers are subscribed with ``resources/subscribe``. A 2026-07-28 server has one ``subscriptions/listen``
stream per connection (run by :meth:`Upstream.connected`), reopened whenever the held set changes; it also carries the
list changes the server's capabilities offer, and its events take the same path as a handshake server's notifications.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, MCPDeprecationWarning, MCPError
from mcp.client.subscriptions import Subscription, SubscriptionLost
from mcp.shared.subscriptions import (
    LISTEN_STREAM_METHODS,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from host_bridge.hub.errors import HubError, UpstreamError
from host_bridge.text import visible

logger = logging.getLogger(__name__)

Holder = Hashable
"""Who holds a subscription or a log level: the editor, or one agent session (any value its client chooses)."""

LOG_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""Logging levels, least severe first."""

_RELISTEN_DELAY = 1.0
_RELISTEN_MAX_DELAY = 30.0
_FIRST_MODERN_VERSION = MODERN_PROTOCOL_VERSIONS[0]
_LIST_CHANGED: dict[type[ServerEvent], types.ServerNotification] = {
    ToolsListChanged: types.ToolListChangedNotification(),
    PromptsListChanged: types.PromptListChangedNotification(),
    ResourcesListChanged: types.ResourceListChangedNotification(),
}


def is_modern_version(protocol_version: str | None) -> bool:
    """Whether ``protocol_version`` is of the 2026-07-28 era (no handshake, ``subscriptions/listen``)."""
    return protocol_version is not None and protocol_version >= _FIRST_MODERN_VERSION


class Upstreams(Protocol):
    """The live clients the book asks through: implemented by the hub over its connections."""

    def client(self, server_id: str) -> Client:
        """The live client; raises :class:`~host_bridge.hub.errors.HubError` when the server is unknown or not
        running."""
        ...


class UpstreamClient(Protocol):
    """A user of the hub's servers that holds upstream state through the book (the broker, the gateway).

    Every method is called on the event loop and must not block; a failure is logged, never propagated.
    """

    def resource_updated(self, server_id: str, uri: str, holders: frozenset[Holder]) -> None:
        """``uri`` of ``server_id`` changed (or may have: after a reconnect); ``holders`` are this client's holders of
        it."""
        ...

    def server_notification(self, server_id: str, message: types.ServerNotification) -> None:
        """A notification of the server other than a resource update: list changes (from a listen stream too), log
        messages, progress …"""
        ...

    def server_restarted(self, server_id: str) -> None:
        """The server connected again after its first start, and the resubscribe pass is done."""
        ...

    def subscriptions_lost(self, server_id: str, uris: Sequence[str], reason: str) -> None:
        """This client's subscriptions to ``uris`` could not be made again after a reconnect and are dropped."""
        ...

    def listening(self, server_id: str) -> None:
        """A 2026-07-28 server's listen stream with resource list changes is open: no change of its list goes unseen
        from now on."""
        ...


@dataclass
class _Listener:
    """Coordination between :meth:`Upstream.connected`'s listen loop and subscribe/unsubscribe on a 2026 connection."""

    changed: anyio.Event = field(default_factory=anyio.Event)
    """Set when the held set changes (then replaced): the stream must be reopened."""
    progress: anyio.Event = field(default_factory=anyio.Event)
    """Set when a stream opened or failed (then replaced)."""
    wanted: int = 0
    """Generation of the held set."""
    opened: int = -1
    """Generation of the set the last stream opened with."""
    failed: int = -1
    """Generation of the set the last failed attempt was made with."""
    error: str = ""
    """Why that attempt failed."""

    def bump(self) -> int:
        """Record a change of the held set and return its generation."""
        self.wanted += 1
        self.changed.set()
        self.changed = anyio.Event()
        return self.wanted

    def report(self, generation: int, error: str | None = None) -> None:
        """Record that a stream for ``generation`` opened, or failed with ``error``."""
        if error is None:
            self.opened = max(self.opened, generation)
        else:
            self.failed = max(self.failed, generation)
            self.error = error
        self.progress.set()
        self.progress = anyio.Event()

    async def settled(self, generation: int) -> bool:
        """Wait until a stream for ``generation`` (or later) opened or failed; True if it opened."""
        while self.opened < generation and self.failed < generation:
            await self.progress.wait()
        return self.opened >= generation


class Upstream:
    """What the hub's servers hold for the editor and the agents; see the module docstring."""

    def __init__(self, sources: Upstreams) -> None:
        self._sources = sources
        self._clients: list[UpstreamClient] = []
        self._held: dict[tuple[str, str], dict[UpstreamClient, set[Holder]]] = {}
        """(server, URI) → the holders of it, by client."""
        self._established: set[tuple[str, str]] = set()
        """(server, URI) the live handshake-era connection was subscribed to."""
        self._establishing: dict[tuple[str, str], anyio.Event] = {}
        """(server, URI) whose ``resources/subscribe`` is on its way → set once it was answered."""
        self._connected: dict[str, Client] = {}
        """Server id → its live client, between :meth:`connected` and :meth:`disconnected`."""
        self._levels: dict[str, dict[Holder, types.LoggingLevel]] = {}
        """Server id → the log level each holder asked for."""
        self._set_levels: dict[str, types.LoggingLevel] = {}
        """Server id → the level its live connection was set to."""
        self._generations: dict[str, int] = {}
        self._listeners: dict[str, _Listener] = {}
        """Server id → the state of its running 2026 listen loop."""

    # Clients.

    def attach(self, client: UpstreamClient) -> None:
        """Tell ``client`` every event from now on."""
        self._clients.append(client)

    def detach(self, client: UpstreamClient) -> None:
        """Stop telling ``client`` anything (its holdings stay until it releases them)."""
        self._clients.remove(client)

    # What is held.

    def held(self, server_id: str, client: UpstreamClient | None = None) -> frozenset[str]:
        """The URIs of ``server_id`` held by anyone, or by ``client``'s holders (also while the server is away)."""
        return frozenset(
            uri
            for (server, uri), by_client in self._held.items()
            if server == server_id and (client is None or client in by_client)
        )

    def holds(self, client: UpstreamClient, holder: Holder, server_id: str, uri: str) -> bool:
        """Whether ``holder`` of ``client`` holds ``uri`` of ``server_id``."""
        return holder in self._held.get((server_id, uri), {}).get(client, ())

    def count(self, client: UpstreamClient, holder: Holder) -> int:
        """How many subscriptions ``holder`` of ``client`` holds."""
        return sum(1 for by_client in self._held.values() if holder in by_client.get(client, ()))

    def generation(self, server_id: str) -> int:
        """How many times ``server_id`` has connected (1 after its first start; 0 before)."""
        return self._generations.get(server_id, 0)

    # Subscriptions.

    async def subscribe(self, client: UpstreamClient, holder: Holder, server_id: str, uri: str) -> None:
        """Hold ``uri`` of ``server_id`` for ``holder``; the server is asked only for the first holder.

        Raises :class:`MCPError` as the server answered a handshake-era ``resources/subscribe``, :class:`HubError`
        when the server is not running or a 2026-07-28 listen stream could not be opened with it; nothing is held then.
        """
        live = self._sources.client(server_id)
        key = (server_id, uri)
        by_client = self._held.setdefault(key, {})
        first = not by_client
        # Held first: the server may send an update before its answer to the subscribe is processed.
        by_client.setdefault(client, set()).add(holder)
        try:
            if is_modern_version(live.protocol_version):
                listener = self._listeners.get(server_id)
                if first and listener is not None and not await listener.settled(listener.bump()):
                    raise UpstreamError(server_id, f"could not subscribe to {uri}: {listener.error}")
                return
            while key not in self._established:
                pending = self._establishing.get(key)
                if pending is not None:
                    # Another holder's subscribe is on its way: its outcome decides whether this one sends its own.
                    await pending.wait()
                    continue
                done = self._establishing[key] = anyio.Event()
                try:
                    await _subscribe(live, uri)
                    self._established.add(key)
                finally:
                    del self._establishing[key]
                    done.set()
        except BaseException:
            self._drop(client, holder, key)
            raise

    async def unsubscribe(self, client: UpstreamClient, holder: Holder, server_id: str, uri: str) -> None:
        """Let go of ``uri`` for ``holder``; the server is told when nobody holds it any more. Upstream failures are
        only logged; nothing happens when ``holder`` did not hold it."""
        key = (server_id, uri)
        if not self.holds(client, holder, server_id, uri):
            return
        self._drop(client, holder, key)
        if key in self._held:
            return
        await self._let_go(server_id, uri)

    async def release(self, client: UpstreamClient, holder: Holder) -> None:
        """Let go of everything ``holder`` holds: its subscriptions, and its log level (the others' level stays in
        force)."""
        for server_id, uri in [key for key, by_client in self._held.items() if holder in by_client.get(client, ())]:
            await self.unsubscribe(client, holder, server_id, uri)
        for server_id, levels in list(self._levels.items()):
            if levels.pop(holder, None) is not None:
                if not levels:
                    del self._levels[server_id]
                await self._apply_level(server_id)

    def _drop(self, client: UpstreamClient, holder: Holder, key: tuple[str, str]) -> None:
        by_client = self._held.get(key)
        if by_client is None:
            return
        holders = by_client.get(client)
        if holders is not None:
            holders.discard(holder)
            if not holders:
                del by_client[client]
        if not by_client:
            del self._held[key]

    async def _let_go(self, server_id: str, uri: str) -> None:
        """Nobody holds ``uri`` any more: take it out of the listen stream, or unsubscribe the server."""
        listener = self._listeners.get(server_id)
        if listener is not None:
            if not await listener.settled(listener.bump()):
                logger.info(
                    "[%s] reopening the subscription stream without %s failed: %s", server_id, uri, listener.error
                )
            return
        if (server_id, uri) not in self._established:
            return
        self._established.discard((server_id, uri))
        live = self._connected.get(server_id)
        if live is None:
            return
        try:
            with warnings.catch_warnings():
                # resources/unsubscribe is deprecated as of 2026-07-28, yet it is the handshake era's only way;
                # the SDK warns when the coroutine is created, so the filter need not span the await.
                warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
                request = live.session.unsubscribe_resource(uri)  # pyright: ignore[reportDeprecated]
            await request
        except MCPError as error:
            logger.warning("[%s] unsubscribing from %s failed: %s", server_id, uri, visible(error.message))

    # The log level.

    async def set_log_level(
        self, holder: Holder, server_id: str, level: types.LoggingLevel, *, declared: bool = True
    ) -> None:
        """Record the level ``holder`` asked for; the server is set to the most verbose level asked for when that
        changes (a handshake-era server that declared ``logging``; ``declared=False`` records only).

        Raises :class:`MCPError` as the server answered ``logging/setLevel``.
        """
        self._levels.setdefault(server_id, {})[holder] = level
        if declared:
            await self._apply_level(server_id)

    def log_level(self, holder: Holder, server_id: str) -> types.LoggingLevel | None:
        """The level ``holder`` asked ``server_id`` for, if any."""
        return self._levels.get(server_id, {}).get(holder)

    def merged_level(self, server_id: str) -> types.LoggingLevel | None:
        """The most verbose level any holder asked ``server_id`` for."""
        levels = self._levels.get(server_id)
        return LOG_LEVELS[min(LOG_LEVELS.index(level) for level in levels.values())] if levels else None

    async def _apply_level(self, server_id: str) -> None:
        level = self.merged_level(server_id)
        live = self._connected.get(server_id)
        if level is None or live is None or self._set_levels.get(server_id) == level:
            return
        capabilities = live.server_capabilities
        if capabilities.logging is None or is_modern_version(live.protocol_version):
            return
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
            request = live.session.set_logging_level(level)  # pyright: ignore[reportDeprecated]
        await request
        self._set_levels[server_id] = level

    # From the hub.

    def notification(self, server_id: str, message: types.ServerNotification) -> None:
        """Route a server's notification: an update to the holders of its URI, anything else to every client.

        Never awaits. While a listen stream runs for the server, that stream is the source of change notifications
        and copies arriving besides it are dropped; so is an update from a server that is not connected.
        """
        if server_id in self._listeners and message.method in LISTEN_STREAM_METHODS:
            return
        if isinstance(message, types.ResourceUpdatedNotification):
            if server_id in self._connected:
                self._updated(server_id, message.params.uri)
            return
        for client in list(self._clients):
            _call(client.server_notification, server_id, message)

    async def connected(
        self, server_id: str, live: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """``server_id`` is connected through ``live``: subscribe again to everything held and report each URI as
        updated, set the log level, tell the clients when this is a restart, then keep the listen stream of a
        2026-07-28 connection until cancelled (returns at once for a handshake-era one).

        The connection's owner runs this in a task of its own for the connection's lifetime (with
        ``TaskGroup.start`` it counts as started once the first listen stream opened or failed), and calls
        :meth:`disconnected` when the connection goes away.
        """
        self._connected[server_id] = live
        self._set_levels.pop(server_id, None)
        generation = self._generations[server_id] = self.generation(server_id) + 1
        await self._resubscribe(server_id, live)
        try:
            await self._apply_level(server_id)
        except MCPError as error:
            logger.warning("[%s] setting its log level again failed: %s", server_id, visible(error.message))
        if generation > 1:
            for client in list(self._clients):
                _call(client.server_restarted, server_id)
        await self._listen(server_id, live, task_status)

    def disconnected(self, server_id: str) -> None:
        """The server's connection went away: what is held stays, to be subscribed again on its next connection."""
        self._connected.pop(server_id, None)
        self._set_levels.pop(server_id, None)
        self._established = {key for key in self._established if key[0] != server_id}

    async def _resubscribe(self, server_id: str, live: Client) -> None:
        uris = sorted(self.held(server_id))
        if not uris:
            return
        capability = live.server_capabilities.resources
        if capability is None or not capability.subscribe:
            self._lose(server_id, uris, f"MCP server {server_id!r} no longer supports subscriptions")
            return
        modern = is_modern_version(live.protocol_version)
        for uri in uris:
            if not modern:
                try:
                    await _subscribe(live, uri)
                except MCPError as error:
                    self._lose(server_id, [uri], f"subscribing to {uri} failed: {visible(error.message)}")
                    continue
                self._established.add((server_id, uri))
            self._updated(server_id, uri)

    def _lose(self, server_id: str, uris: Sequence[str], reason: str) -> None:
        lost: dict[UpstreamClient, list[str]] = {}
        for uri in uris:
            for client in self._held.pop((server_id, uri), {}):
                lost.setdefault(client, []).append(uri)
        for client, its_uris in lost.items():
            _call(client.subscriptions_lost, server_id, its_uris, reason)

    def _updated(self, server_id: str, uri: str) -> None:
        for client, holders in list(self._held.get((server_id, uri), {}).items()):
            _call(client.resource_updated, server_id, uri, frozenset(holders))

    def _list_changed(self, server_id: str, event: ServerEvent) -> None:
        message = _LIST_CHANGED[type(event)]
        for client in list(self._clients):
            _call(client.server_notification, server_id, message)

    # The 2026-07-28 listen stream.

    async def _listen(self, server_id: str, live: Client, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Keep the ``subscriptions/listen`` stream of a 2026-07-28 connection; returns at once for older ones.

        The stream is reopened whenever the held set changes, and after a failure (with backoff). After a lost stream
        every held URI is reported as updated and every list it follows as changed, since events may have been
        missed.
        """
        capabilities = live.server_capabilities
        resources = capabilities.resources
        lists = {
            "tools_list_changed": bool(capabilities.tools and capabilities.tools.list_changed),
            "prompts_list_changed": bool(capabilities.prompts and capabilities.prompts.list_changed),
            "resources_list_changed": bool(resources and resources.list_changed),
        }
        subscribe = bool(resources and resources.subscribe)
        if not is_modern_version(live.protocol_version) or not (subscribe or any(lists.values())):
            task_status.started()
            return
        listener = self._listeners[server_id] = _Listener()
        starting = True

        def report(generation: int, error: str | None = None) -> None:
            nonlocal starting
            listener.report(generation, error)
            if starting:
                starting = False
                task_status.started()

        delay = _RELISTEN_DELAY
        missed = False
        listening = False
        try:
            while True:
                generation = listener.wanted
                changed = listener.changed
                uris = sorted(self.held(server_id)) if subscribe else []
                if not uris and not any(lists.values()):
                    report(generation)
                    await changed.wait()
                    continue
                try:
                    async with live.listen(resource_subscriptions=uris, **lists) as stream:
                        report(generation)
                        if lists["resources_list_changed"] and not listening:
                            for client in list(self._clients):
                                _call(client.listening, server_id)
                        listening = True
                        if missed:
                            self._refresh_all(server_id, stream)
                            missed = False
                        delay = _RELISTEN_DELAY
                        if await self._pump(server_id, stream, changed) == "changed":
                            continue
                    logger.info("[%s] the server closed its subscription stream; listening again", server_id)
                except (MCPError, SubscriptionLost, TimeoutError, HubError) as error:
                    report(generation, visible(str(error)))
                    logger.warning("[%s] subscription stream failed: %s", server_id, visible(str(error)))
                missed = True
                with anyio.move_on_after(delay):
                    await changed.wait()
                delay = min(delay * 2, _RELISTEN_MAX_DELAY)
        finally:
            if self._listeners.get(server_id) is listener:
                del self._listeners[server_id]
            listener.report(listener.wanted, "the connection to the server ended")

    async def _pump(self, server_id: str, stream: Subscription, changed: anyio.Event) -> Literal["changed", "closed"]:
        """Feed the stream's events in until it closes or the held set changes."""
        outcome: Literal["changed", "closed"] = "closed"
        lost: SubscriptionLost | None = None
        async with anyio.create_task_group() as tasks:

            async def watch() -> None:
                nonlocal outcome
                await changed.wait()
                outcome = "changed"
                tasks.cancel_scope.cancel()

            tasks.start_soon(watch)
            try:
                async for event in stream:
                    if isinstance(event, ResourceUpdated):
                        self._updated(server_id, event.uri)
                    else:
                        self._list_changed(server_id, event)
            except SubscriptionLost as error:
                lost = error
            tasks.cancel_scope.cancel()
        if lost is not None:
            raise lost
        return outcome

    def _refresh_all(self, server_id: str, stream: Subscription) -> None:
        for uri in sorted(self.held(server_id)):
            self._updated(server_id, uri)
        honored = stream.honored
        for flag, event in (
            (honored.tools_list_changed, ToolsListChanged()),
            (honored.prompts_list_changed, PromptsListChanged()),
            (honored.resources_list_changed, ResourcesListChanged()),
        ):
            if flag:
                self._list_changed(server_id, event)


async def _subscribe(live: Client, uri: str) -> None:
    """``resources/subscribe`` on a handshake-era connection."""
    with warnings.catch_warnings():
        # resources/subscribe is deprecated as of 2026-07-28, yet it is the handshake era's only way; the SDK warns
        # when the coroutine is created, so the filter need not span the await.
        warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
        request = live.session.subscribe_resource(uri)  # pyright: ignore[reportDeprecated]
    await request


def _call(callback: Callable[..., None], *args: object) -> None:
    """Run a client's callback; its failure is logged, never propagated into the book."""
    try:
        callback(*args)
    except Exception:
        logger.exception("upstream client callback %r failed", callback)
