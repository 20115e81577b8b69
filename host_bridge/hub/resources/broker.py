"""The resource broker: one facade over listing, reads and subscriptions of every running MCP server.

The hub owns one :class:`ResourceBroker`; the editor channel and the terminal call it. Each concern lives in its own
module of :mod:`host_bridge.hub.resources` and this class only wires them to the same servers and settings.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import anyio

from host_bridge.hub.resources.cache import ResourceCache
from host_bridge.hub.resources.listing import Listing
from host_bridge.hub.resources.models import (
    Completion,
    ReadResult,
    ResourceItem,
    ResourcePage,
    ResourceSettings,
    TemplateItem,
)
from host_bridge.hub.resources.reads import Reads
from host_bridge.hub.resources.sources import ResourceSources
from host_bridge.hub.resources.subscriptions import Subscriptions
from host_bridge.hub.resources.templates import Value
from host_bridge.hub.upstream import Upstream


class ResourceBroker:
    """Resources, templates, reads and subscriptions across the hub's MCP servers."""

    def __init__(
        self,
        sources: ResourceSources,
        *,
        settings: ResourceSettings | None = None,
        on_updated: Callable[[str, str], None] | None = None,
        on_list_changed: Callable[[str], None] | None = None,
        on_notice: Callable[[str, str], None] | None = None,
        upstream: Upstream | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``on_updated(server, uri)``, ``on_list_changed(server)`` and ``on_notice(server, message)`` are called
        from :meth:`run`; ``upstream`` is the hub's book of upstream state (a book of its own when not given);
        ``clock`` (seconds) times the flood detection and exists for tests."""
        self.settings = settings or ResourceSettings()
        """The limits in force."""
        self.upstream = upstream if upstream is not None else Upstream(sources)
        """The book the editor's subscriptions are held in (the hub's, shared with the gateway)."""
        self._sources = sources
        self._subscriptions = Subscriptions(
            sources,
            self.settings,
            self.upstream,
            on_updated=on_updated,
            on_list_changed=on_list_changed,
            on_notice=on_notice,
            on_list_stale=self._list_stale,
            on_listening=self._listening,
            clock=clock,
        )
        self._cache = ResourceCache(sources, self.settings, on_changed=self._subscriptions.report_list_changed)
        self._listing = Listing(sources, self.settings, self._cache)
        self._reads = Reads(sources, self.settings)

    # Listing (host_bridge.hub.resources.listing).

    async def list_resources(
        self, server: str | None = None, cursor: str | None = None, query: str | None = None, limit: int | None = None
    ) -> ResourcePage:
        """One page of resources of ``server``, or of every resource server (see :meth:`Listing.list_resources`),
        from the kept lists (:mod:`host_bridge.hub.resources.cache`)."""
        if server is not None:
            await self._sources.ready(server)
        return await self._listing.list_resources(server, cursor, query, limit)

    async def list_all(self, server: str) -> tuple[ResourceItem, ...]:
        """Every resource of one server."""
        await self._sources.ready(server)
        return await self._listing.list_all(server)

    async def list_templates(self, server: str | None = None) -> tuple[TemplateItem, ...]:
        """Every resource template of one server, or of all resource servers."""
        if server is not None:
            await self._sources.ready(server)
        return await self._listing.list_templates(server)

    # Completion, expansion and reads (host_bridge.hub.resources.reads).

    async def complete(
        self, server: str, uri_template: str, name: str, value: str, arguments: Mapping[str, Value] | None = None
    ) -> Completion:
        """Suggestions for one template argument (see :meth:`Reads.complete`)."""
        await self._sources.ready(server)
        return await self._reads.complete(server, uri_template, name, value, arguments)

    def expand(self, uri_template: str, arguments: Mapping[str, Value]) -> str:
        """An RFC 6570 expansion (see :meth:`Reads.expand`)."""
        return self._reads.expand(uri_template, arguments)

    async def read(
        self,
        server: str,
        uri: str | None = None,
        *,
        uri_template: str | None = None,
        arguments: Mapping[str, Value] | None = None,
    ) -> ReadResult:
        """Read ``uri`` or a template's expansion from ``server`` only (see :meth:`Reads.read`)."""
        await self._sources.ready(server)
        return await self._reads.read(server, uri, uri_template=uri_template, arguments=arguments)

    # Subscriptions and notifications (host_bridge.hub.resources.subscriptions, held in host_bridge.hub.upstream).

    def subscriptions(self, server_id: str) -> frozenset[str]:
        """The URIs of ``server_id`` the editor is subscribed to (including those awaiting a reconnect)."""
        return self._subscriptions.subscriptions(server_id)

    async def subscribe(self, server: str, uri: str) -> None:
        """Subscribe to updates of ``uri`` (see :meth:`Subscriptions.subscribe`)."""
        await self._sources.ready(server)
        await self._subscriptions.subscribe(server, uri)

    async def unsubscribe(self, server: str, uri: str) -> None:
        """Stop updates of ``uri``; does nothing if it was not subscribed."""
        await self._subscriptions.unsubscribe(server, uri)

    def forget_server(self, server_id: str) -> None:
        """The server's connection went away: drop its kept list and pending notifications (its subscriptions stay
        in the book)."""
        self._cache.forget(server_id)
        self._subscriptions.forget_server(server_id)

    # The kept lists (host_bridge.hub.resources.cache).

    def _list_stale(self, server_id: str) -> None:
        self._cache.invalidate(server_id, "changed")

    def _listening(self, server_id: str) -> None:
        self._cache.server_running(server_id, listening=True)

    def server_running(self, server_id: str) -> None:
        """The server is running: fetch its list of resources now, for the listings to come."""
        self._cache.server_running(server_id)

    def roots_changed(self, server_id: str) -> None:
        """The folders shared with the server changed: a listing from now on asks it again."""
        self._cache.invalidate(server_id, "roots")

    def roots_answered(self, server_id: str, roots: Sequence[str]) -> None:
        """The server was answered these roots (URIs): a list fetched with other roots is not kept."""
        self._cache.roots_answered(server_id, tuple(roots))

    async def run(self) -> None:
        """Fetch lists in the background and deliver queued notifications until cancelled; the hub runs this once,
        in its task group."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._cache.run)
            await self._subscriptions.run()
