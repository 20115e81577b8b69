"""The editor's resource subscriptions and notifications: updates and list changes coalesced on their way to it.

What a server is subscribed to, and keeping that across reconnects, is the hub's book of upstream state
(:class:`~host_bridge.hub.upstream.Upstream`); the editor holds its subscriptions there under one holder, as a client of
that book beside the agent gateway. This module is what the editor adds: every update and list change is queued and
delivered at most once per ``update_interval``, and a URI that floods is unsubscribed with a notice.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio
import anyio.abc
import mcp_types as types
from mcp import MCPError

from host_bridge.hub.errors import ResourceNotFoundError, UpstreamError
from host_bridge.hub.resources.labels import upstream_text
from host_bridge.hub.resources.models import ResourceSettings
from host_bridge.hub.resources.sources import NOT_FOUND_CODES, ResourceSources, upstream
from host_bridge.hub.upstream import Holder, Upstream

logger = logging.getLogger(__name__)

EDITOR = "editor"
"""The holder under which the editor's subscriptions are kept in the book."""
_FLOOD_SECONDS = 5


@dataclass
class _Rate:
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


class Subscriptions:
    """The editor's resource subscriptions across the broker's servers, and the notifications they bring; a client of
    the hub's :class:`~host_bridge.hub.upstream.Upstream` book."""

    def __init__(
        self,
        sources: ResourceSources,
        settings: ResourceSettings,
        upstream: Upstream,
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
        self._upstream = upstream
        self._on_updated = on_updated
        self._on_list_changed = on_list_changed
        self._on_notice = on_notice
        self._on_list_stale = on_list_stale
        self._on_listening = on_listening
        self._clock = clock
        self._rates: dict[tuple[str, str], _Rate] = {}
        """(server, URI) the editor holds → its rate bookkeeping."""
        self._pending_updates: dict[tuple[str, str], None] = {}
        """(server, URI) updated since the last delivery, in arrival order; always held ones."""
        self._pending_lists: dict[str, None] = {}
        """Servers whose list changed since the last delivery."""
        self._flooded: dict[tuple[str, str], int] = {}
        """(server, URI) to unsubscribe for flooding → its rate in updates per second."""
        self._wake: anyio.Event | None = None
        upstream.attach(self)

    def subscriptions(self, server_id: str) -> frozenset[str]:
        """The URIs of ``server_id`` the editor is subscribed to (including those awaiting a reconnect)."""
        return self._upstream.held(server_id, self)

    async def subscribe(self, server: str, uri: str) -> None:
        """Subscribe to updates of ``uri``; they arrive through ``on_updated``, coalesced.

        Raises :class:`UpstreamError` when the server does not support subscriptions or refuses this one.
        """
        client = self._sources.client(server)
        capability = client.server_capabilities.resources
        if capability is None or not capability.subscribe:
            raise UpstreamError(server, "does not support subscriptions to resources")
        self._settings.check_uri_length(uri)
        key = (server, uri)
        rate = self._rates.get(key)
        if rate is not None and not rate.flooding:
            return
        self._rates[key] = _Rate()
        try:
            await self._upstream.subscribe(self, EDITOR, server, uri)
        except BaseException as error:
            self._forget(key)
            if isinstance(error, MCPError):
                if error.code in NOT_FOUND_CODES:
                    raise ResourceNotFoundError(server, uri, upstream_text(error.message)) from error
                raise upstream(self._sources, server, error, f"subscribing to {uri}", client) from error
            raise

    async def unsubscribe(self, server: str, uri: str) -> None:
        """Stop updates of ``uri``; does nothing if it was not subscribed. Upstream failures are only logged."""
        self._forget((server, uri))
        await self._upstream.unsubscribe(self, EDITOR, server, uri)

    def _forget(self, key: tuple[str, str]) -> None:
        self._rates.pop(key, None)
        self._pending_updates.pop(key, None)

    def forget_server(self, server_id: str) -> None:
        """The server's connection went away: drop its pending notifications (its subscriptions stay in the book and
        are made again on its next connection)."""
        self._pending_lists.pop(server_id, None)
        for key in [key for key in self._pending_updates if key[0] == server_id]:
            del self._pending_updates[key]
        for key in [key for key in self._flooded if key[0] == server_id]:
            del self._flooded[key]

    # UpstreamClient.

    def resource_updated(self, server_id: str, uri: str, holders: frozenset[Holder]) -> None:
        """A held URI changed: count it against the flood limit and queue it for the editor."""
        key = (server_id, uri)
        rate = self._rates.setdefault(key, _Rate())
        if rate.flooding:
            return
        second = math.floor(self._clock())
        limit = self._settings.max_updates_per_second
        if second != rate.second:
            if second == rate.second + 1 and rate.count > limit:
                rate.streak += 1
                rate.streak_total += rate.count
            else:
                rate.streak = rate.streak_total = 0
            rate.second = second
            rate.count = 0
        rate.count += 1
        if rate.count > limit and rate.streak >= _FLOOD_SECONDS - 1:
            rate.flooding = True
            self._flooded[key] = (rate.streak_total + rate.count) // (rate.streak + 1)
        self._pending_updates[key] = None
        self._wake_flusher()

    def server_notification(self, server_id: str, message: types.ServerNotification) -> None:
        """A server's resource list changed: its kept list is stale, and the editor is told (coalesced)."""
        if isinstance(message, types.ResourceListChangedNotification):
            self._stale(server_id)
            self.report_list_changed(server_id)

    def server_restarted(self, server_id: str) -> None:
        """Nothing to do: the held URIs were reported as updated by the resubscribe pass."""

    def subscriptions_lost(self, server_id: str, uris: Sequence[str], reason: str) -> None:
        """Tell the user which resources the editor no longer follows."""
        for uri in uris:
            self._forget((server_id, uri))
        following = f"no longer following {uris[0]}" if len(uris) == 1 else f"stopped following {len(uris)} resources"
        self._notice(server_id, f"{reason}; {following}")

    def listening(self, server_id: str) -> None:
        """A 2026-07-28 server's listen stream is open: its list can be kept."""
        if self._on_listening is not None:
            _call(self._on_listening, server_id)

    # Delivery to the editor.

    def report_list_changed(self, server_id: str) -> None:
        """Tell the editor (coalesced, through :meth:`run`) that the server's list changed."""
        if self.subscriptions(server_id) or server_id in self._sources.resource_servers():
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
            if self._on_updated is not None and (server_id, uri) in self._rates:
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
