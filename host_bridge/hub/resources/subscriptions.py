"""Resource subscriptions and notifications: updates and list changes coalesced on their way to the editor.

Handshake-era servers are subscribed with ``resources/subscribe``; 2026-07-28 servers through one
``subscriptions/listen`` stream per connection, reopened whenever the subscribed set changes. Every update and list
change is queued and delivered at most once per ``update_interval``; a URI that floods is unsubscribed with a
notice. Subscriptions outlive a reconnect: they are parked and revived on the next connection.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, MCPDeprecationWarning, MCPError
from mcp.client.subscriptions import Subscription, SubscriptionLost
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

from host_bridge.hub.errors import HubError, ResourceNotFoundError, UpstreamError
from host_bridge.hub.resources.labels import upstream_text
from host_bridge.hub.resources.models import ResourceSettings
from host_bridge.hub.resources.sources import NOT_FOUND_CODES, ResourceSources, is_modern_version, upstream

logger = logging.getLogger(__name__)

_FLOOD_SECONDS = 5
_RELISTEN_DELAY = 1.0
_RELISTEN_MAX_DELAY = 30.0


@dataclass
class _Subscription:
    """Rate bookkeeping of one subscribed URI."""

    second: int = -1
    """The whole second the current count belongs to."""
    count: int = 0
    """Updates in that second."""
    streak: int = 0
    """Consecutive whole seconds over the limit right before ``second``."""
    streak_total: int = 0
    """Updates in those seconds."""
    flooding: bool = False
    """Over the limit for long enough: ignored until the flusher unsubscribes it."""


@dataclass
class _Listener:
    """Coordination between :meth:`Subscriptions.serve_subscriptions` and (un)subscribe on a 2026 connection."""

    changed: anyio.Event = field(default_factory=anyio.Event)
    """Set when the subscribed set changes (then replaced): the stream must be reopened."""
    progress: anyio.Event = field(default_factory=anyio.Event)
    """Set when a stream opened or failed (then replaced)."""
    wanted: int = 0
    """Generation of the subscribed set."""
    opened: int = -1
    """Generation of the set the last stream opened with."""
    failed: int = -1
    """Generation of the set the last failed attempt was made with."""
    error: str = ""
    """Why that attempt failed."""

    def bump(self) -> int:
        """Record a change of the subscribed set and return its generation."""
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


class Subscriptions:
    """The editor's resource subscriptions across the broker's servers, and the notifications they bring."""

    def __init__(
        self,
        sources: ResourceSources,
        settings: ResourceSettings,
        *,
        on_updated: Callable[[str, str], None] | None = None,
        on_list_changed: Callable[[str], None] | None = None,
        on_notice: Callable[[str, str], None] | None = None,
        on_list_stale: Callable[[str], None] | None = None,
        on_listening: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``on_updated(server, uri)``, ``on_list_changed(server)`` and ``on_notice(server, message)`` are called
        from :meth:`run`; ``on_list_stale(server)`` at once when a server's list may have changed (its notification,
        or a lost stream); ``on_listening(server)`` once the first listen stream of a 2026-07-28 connection that
        declared ``listChanged`` is open (from then on no change of its list goes unnoticed); ``clock`` (seconds) times
        the flood detection and exists for tests."""
        self._sources = sources
        self._settings = settings
        self._on_updated = on_updated
        self._on_list_changed = on_list_changed
        self._on_notice = on_notice
        self._on_list_stale = on_list_stale
        self._on_listening = on_listening
        self._clock = clock
        self._subscriptions: dict[str, dict[str, _Subscription]] = {}
        """Server id → its subscribed URIs that receive updates."""
        self._dormant: dict[str, set[str]] = {}
        """Server id → URIs subscribed before its connection went away, awaiting :meth:`resubscribe`."""
        self._pending_updates: dict[tuple[str, str], None] = {}
        """(server, URI) updated since the last delivery, in arrival order; always subscribed ones."""
        self._pending_lists: dict[str, None] = {}
        """Servers whose list changed since the last delivery."""
        self._flooded: dict[tuple[str, str], int] = {}
        """(server, URI) to unsubscribe for flooding → its rate in updates per second."""
        self._wake: anyio.Event | None = None
        self._listeners: dict[str, _Listener] = {}
        """Server id → the state of its running 2026 listen loop."""
        self.held_elsewhere: Callable[[str, str], bool] = lambda _server, _uri: False
        """Whether someone besides the editor (an agent on the gateway) still needs the server's subscription to a URI;
        then :meth:`unsubscribe` leaves the server's own subscription in place."""

    def subscriptions(self, server_id: str) -> frozenset[str]:
        """The URIs of ``server_id`` the editor is subscribed to (including those awaiting a reconnect)."""
        return frozenset(self._subscriptions.get(server_id, {})) | self._dormant.get(server_id, set())

    async def subscribe(self, server: str, uri: str) -> None:
        """Subscribe to updates of ``uri``; they arrive through ``on_updated``, coalesced.

        Raises :class:`UpstreamError` when the server does not support subscriptions or refuses this one.
        """
        client = self._sources.client(server)
        capability = client.server_capabilities.resources
        if capability is None or not capability.subscribe:
            raise UpstreamError(server, "does not support subscriptions to resources")
        self._settings.check_uri_length(uri)
        active = self._subscriptions.get(server, {})
        if uri in active and not active[uri].flooding:
            return
        if is_modern_version(self._sources.protocol_version(server)):
            self._subscriptions.setdefault(server, {})[uri] = _Subscription()
            listener = self._listeners.get(server)
            if listener is not None and not await listener.settled(listener.bump()):
                self._discard(server, uri)
                raise UpstreamError(server, f"could not subscribe to {uri}: {listener.error}")
            return
        # Registered first: the server may send an update before its answer to the subscribe is processed.
        self._subscriptions.setdefault(server, {})[uri] = _Subscription()
        try:
            await self._send_subscribe(server, client, uri)
        except BaseException:
            self._discard(server, uri)
            raise

    async def unsubscribe(self, server: str, uri: str) -> None:
        """Stop updates of ``uri``; does nothing if it was not subscribed. Upstream failures are only logged."""
        self._dormant.get(server, set()).discard(uri)
        if not self._discard(server, uri):
            return
        listener = self._listeners.get(server)
        if listener is not None:
            if not await listener.settled(listener.bump()):
                logger.info("[%s] reopening the subscription stream without %s failed: %s", server, uri, listener.error)
            return
        if self.held_elsewhere(server, uri):
            return
        try:
            if is_modern_version(self._sources.protocol_version(server)):
                return
            client = self._sources.client(server)
            with warnings.catch_warnings():
                # resources/unsubscribe is deprecated as of 2026-07-28, yet it is the handshake era's only way;
                # the SDK warns when the coroutine is created, so the filter need not span the await.
                warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
                request = client.session.unsubscribe_resource(uri)  # pyright: ignore[reportDeprecated]
            await request
        except HubError as error:
            logger.info("unsubscribing from %s: %s", uri, error.message)
        except MCPError as error:
            logger.warning("[%s] unsubscribing from %s failed: %s", server, uri, upstream_text(error.message))

    def _discard(self, server: str, uri: str) -> bool:
        """Forget an active subscription and its pending update; False if there was none."""
        active = self._subscriptions.get(server)
        if active is None or uri not in active:
            return False
        del active[uri]
        if not active:
            del self._subscriptions[server]
        self._pending_updates.pop((server, uri), None)
        return True

    async def resubscribe(self, server_id: str) -> None:
        """After a (re)connect: subscribe again to every URI subscribed before, and report each as updated.

        Failures drop that subscription with a notice; nothing is raised.
        """
        uris = sorted(self.subscriptions(server_id))
        self._dormant.pop(server_id, None)
        if not uris:
            return
        try:
            modern = is_modern_version(self._sources.protocol_version(server_id))
            client = self._sources.client(server_id)
        except HubError as error:
            logger.info("subscriptions of %r kept for later: %s", server_id, error.message)
            self._dormant[server_id] = set(uris)
            return
        capability = client.server_capabilities.resources
        if capability is None or not capability.subscribe:
            self._notice(
                server_id,
                f"MCP server {server_id!r} no longer supports subscriptions; stopped following {len(uris)} resource(s)",
            )
            return
        active = self._subscriptions.setdefault(server_id, {})
        for uri in uris:
            if not modern:
                try:
                    await self._send_subscribe(server_id, client, uri)
                except HubError as error:
                    self._notice(server_id, f"{error.message}; no longer following {uri}")
                    continue
            active[uri] = _Subscription()
            self._pending_updates[(server_id, uri)] = None
        if not active:
            del self._subscriptions[server_id]
        listener = self._listeners.get(server_id)
        if listener is not None:
            listener.bump()
        self._wake_flusher()

    async def _send_subscribe(self, server: str, client: Client, uri: str) -> None:
        """``resources/subscribe`` on a handshake-era connection, errors mapped."""
        with warnings.catch_warnings():
            # resources/subscribe is deprecated as of 2026-07-28, yet it is the handshake era's only way; the SDK
            # warns when the coroutine is created, so the filter need not span the await.
            warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
            request = client.session.subscribe_resource(uri)  # pyright: ignore[reportDeprecated]
        try:
            await request
        except MCPError as error:
            if error.code in NOT_FOUND_CODES:
                raise ResourceNotFoundError(server, uri, upstream_text(error.message)) from error
            raise upstream(self._sources, server, error, f"subscribing to {uri}", client) from error

    def forget_server(self, server_id: str) -> None:
        """The server's connection went away: drop its pending notifications and park its subscriptions.

        Parked subscriptions receive nothing; :meth:`resubscribe` revives them on the next connection and
        :meth:`unsubscribe` removes them.
        """
        active = self._subscriptions.pop(server_id, {})
        if active:
            self._dormant.setdefault(server_id, set()).update(active)
        self._pending_lists.pop(server_id, None)
        for key in [key for key in self._pending_updates if key[0] == server_id]:
            del self._pending_updates[key]
        for key in [key for key in self._flooded if key[0] == server_id]:
            del self._flooded[key]

    async def serve_subscriptions(
        self, server_id: str, client: Client, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Keep the ``subscriptions/listen`` stream of a 2026-07-28 connection; returns at once for older ones.

        The connection owner runs this in its own task for the connection's lifetime (with ``TaskGroup.start``
        it counts as started once the first stream opened or failed). The stream is reopened whenever the
        subscribed set changes, and after a failure (with backoff); its events take the same path as
        notifications. After a lost stream every subscribed URI is reported as updated, since events may have
        been missed.
        """
        capability = client.server_capabilities.resources
        if (
            not is_modern_version(client.protocol_version)
            or capability is None
            or not (capability.subscribe or capability.list_changed)
        ):
            task_status.started()
            return
        list_changed = bool(capability.list_changed)
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
                uris = sorted(self._subscriptions.get(server_id, {}))
                if not uris and not list_changed:
                    report(generation)
                    await changed.wait()
                    continue
                try:
                    async with client.listen(
                        resources_list_changed=list_changed, resource_subscriptions=uris
                    ) as stream:
                        report(generation)
                        if list_changed and not listening and self._on_listening is not None:
                            _call(self._on_listening, server_id)
                        listening = True
                        if missed:
                            self._refresh_all(server_id, list_changed)
                            missed = False
                        delay = _RELISTEN_DELAY
                        if await self._pump(server_id, stream, changed) == "changed":
                            continue
                    logger.info("[%s] the server closed its subscription stream; listening again", server_id)
                except (MCPError, SubscriptionLost, TimeoutError) as error:
                    report(generation, upstream_text(str(error)))
                    logger.warning("[%s] subscription stream failed: %s", server_id, upstream_text(str(error)))
                missed = True
                with anyio.move_on_after(delay):
                    await changed.wait()
                delay = min(delay * 2, _RELISTEN_MAX_DELAY)
        finally:
            if self._listeners.get(server_id) is listener:
                del self._listeners[server_id]
            listener.report(listener.wanted, "the connection to the server ended")

    async def _pump(self, server_id: str, stream: Subscription, changed: anyio.Event) -> Literal["changed", "closed"]:
        """Feed the stream's events in until it closes or the subscribed set changes."""
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
                    elif isinstance(event, ResourcesListChanged):
                        self._list_changed(server_id)
            except SubscriptionLost as error:
                lost = error
            tasks.cancel_scope.cancel()
        if lost is not None:
            raise lost
        return outcome

    def _refresh_all(self, server_id: str, list_changed: bool) -> None:
        for uri in self._subscriptions.get(server_id, {}):
            self._pending_updates[(server_id, uri)] = None
        if list_changed:
            self._stale(server_id)
            self._pending_lists[server_id] = None
        self._wake_flusher()

    # Notifications.

    def handle_notification(self, server_id: str, notification: types.ServerNotification) -> None:
        """Take a server notification; resource ones are queued for :meth:`run`, others ignored.

        Never awaits. An update for a URI that is not subscribed (or from an unknown server) is dropped. While
        :meth:`serve_subscriptions` listens to the server, its own stream is the source and copies are dropped.
        """
        if server_id in self._listeners:
            return
        if isinstance(notification, types.ResourceUpdatedNotification):
            self._updated(server_id, notification.params.uri)
        elif isinstance(notification, types.ResourceListChangedNotification):
            self._list_changed(server_id)

    def _updated(self, server_id: str, uri: str) -> None:
        subscription = self._subscriptions.get(server_id, {}).get(uri)
        if subscription is None or subscription.flooding:
            return
        second = math.floor(self._clock())
        limit = self._settings.max_updates_per_second
        if second != subscription.second:
            if second == subscription.second + 1 and subscription.count > limit:
                subscription.streak += 1
                subscription.streak_total += subscription.count
            else:
                subscription.streak = subscription.streak_total = 0
            subscription.second = second
            subscription.count = 0
        subscription.count += 1
        if subscription.count > limit and subscription.streak >= _FLOOD_SECONDS - 1:
            subscription.flooding = True
            rate = (subscription.streak_total + subscription.count) // (subscription.streak + 1)
            self._flooded[(server_id, uri)] = rate
        self._pending_updates[(server_id, uri)] = None
        self._wake_flusher()

    def _list_changed(self, server_id: str) -> None:
        self._stale(server_id)
        self.report_list_changed(server_id)

    def report_list_changed(self, server_id: str) -> None:
        """Tell the editor (coalesced, through :meth:`run`) that the server's list changed."""
        if server_id in self._subscriptions or server_id in self._sources.resource_servers():
            self._pending_lists[server_id] = None
            self._wake_flusher()

    def _stale(self, server_id: str) -> None:
        if self._on_list_stale is not None:
            _call(self._on_list_stale, server_id)

    def _wake_flusher(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        """Deliver queued notifications until cancelled: each pending URI or list at most once per
        ``update_interval``, and unsubscribe flooding URIs. The hub runs this once, in its task group."""
        async with anyio.create_task_group() as tasks:
            while True:
                if not (self._pending_updates or self._pending_lists or self._flooded):
                    self._wake = anyio.Event()
                    await self._wake.wait()
                self._flush(tasks)
                await anyio.sleep(self._settings.update_interval)

    def _flush(self, tasks: anyio.abc.TaskGroup) -> None:
        updates, self._pending_updates = self._pending_updates, {}
        lists, self._pending_lists = self._pending_lists, {}
        flooded, self._flooded = self._flooded, {}
        for server_id, uri in updates:
            if self._on_updated is not None and uri in self._subscriptions.get(server_id, {}):
                _call(self._on_updated, server_id, uri)
        for server_id in lists:
            if self._on_list_changed is not None:
                _call(self._on_list_changed, server_id)
        for (server_id, uri), rate in flooded.items():
            self._notice(server_id, f"MCP server {server_id!r} sent {rate} updates/s for {uri}; unsubscribed")
            tasks.start_soon(self.unsubscribe, server_id, uri)

    def _notice(self, server_id: str, message: str) -> None:
        logger.warning("%s", message)
        if self._on_notice is not None:
            _call(self._on_notice, server_id, message)


def _call(callback: Callable[..., None], *args: str) -> None:
    """Run an event callback; its failure is logged, never propagated into the broker."""
    try:
        callback(*args)
    except Exception:
        logger.exception("resource event callback %r failed", callback)
