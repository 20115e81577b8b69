"""Every running server's resource list, fetched once and kept for the editor's listings.

A :class:`Snapshot` is one walk through a server's ``resources/list`` pages. It is fetched in the background (in the
broker's task group, see :meth:`ResourceCache.run`) and read by any number of listings while it grows, so a listing
waits for no more than the resources it hands out next. Per server the cache keeps the snapshot a listing that
begins now reads (``current``), the one it replaced (a listing under way finishes the list it began) and, for a
server that does not say when its list changes, a refresh under way that is not shown yet (``fresh``).

When a server's list is fetched, and what is kept:

- a server that starts running is listed at once (prefetch), so the first listing is answered from memory (a
  2026-07-28 server that declares ``listChanged``, once its listen stream is open);
- ``notifications/resources/list_changed`` (or a lost subscription stream, which may have missed one): a new
  snapshot, which every listing that begins afterwards reads from its first page on (never the list from before);
  while a fetch is under way, once it ends (and the editor is told again if that one differs);
- a change of the folders shared with the server, or of the roots it was answered: everything kept of it is dropped
  at once, its fetch cancelled and listings under way end for it with a note (the change may have revoked a folder
  those resources came from); the next listing fetches it (not at once: a consent change reaches many servers
  together, and those that change their list say so); the editor is told its list changed when a kept list is
  dropped because the server was answered other roots; the first roots a server is answered fetch it again once,
  since it may have been listed before it had any;
- a server that does not declare ``listChanged`` is asked again, in the background, when a listing of it begins and
  its list is older than ``revalidate_after``: that listing gets the kept list at once, and the new one replaces it
  only if it differs, and then the editor is told its list changed (``on_changed``, coalesced with the server's own
  notifications);
- a server that stops running (stopped, restarting, failed, removed, no longer trusted) loses every snapshot at once
  and its fetches are cancelled: a listing under way ends for it, as it did when it asked a stopped server;
- a snapshot stops at ``max_listed_resources`` resources or ``max_listed_bytes`` (the JSON the editor would receive,
  near enough), at ``max_pages`` pages or on a repeated cursor, with a sentence that says so; so does a server's
  memory here: at most two snapshots at a time. A failed fetch is kept only for the listings that read it: the next
  listing asks the server again.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.abc
import mcp_types as types
from mcp import MCPError
from pydantic import ValidationError

from host_bridge.hub.errors import HubError, UpstreamError
from host_bridge.hub.resources.cursors import UpstreamWalk
from host_bridge.hub.resources.items import resource_item, wire_size
from host_bridge.hub.resources.models import ResourceItem, ResourceSettings
from host_bridge.hub.resources.sources import ResourceSources, is_modern_version, upstream, upstream_error

logger = logging.getLogger(__name__)

Reason = Literal["started", "changed", "again", "revalidate"]
"""Why a snapshot was fetched: the server started running (or a listing found nothing kept), it said its list
changed, the list may have changed while the previous fetch was under way, or a refresh of a server that does not
say when its list changes."""


@dataclass(eq=False)
class Snapshot:
    """One fetch of a server's resource list: what listings read, growing while it is fetched."""

    server: str
    """The server listed."""
    generation: int
    """Names this snapshot in listing cursors; unique in the process."""
    reason: Reason
    """Why it was fetched."""
    asked: bool = False
    """A listing reads it: its failure is the connection's to judge too (a lost session reconnects), as the failure
    of any request is. A fetch nobody reads fails on its own: a server that breaks its session on ``resources/list``
    is not restarted over and over for a list nobody asked for."""
    items: list[ResourceItem] = field(default_factory=list[ResourceItem], repr=False)
    """The resources so far, in the server's order."""
    page_ends: list[int] = field(default_factory=list[int], repr=False)
    """``len(items)`` after each of the server's pages: a listing without a limit hands them out page by page."""
    size: int = 0
    """:func:`~host_bridge.hub.resources.items.wire_size` of the items."""
    running: bool = False
    """Its fetch has begun."""
    done: bool = False
    """Its fetch ended (completely, cut short, failed, cancelled)."""
    finished: float = 0.0
    """When the fetch ended (the cache's clock)."""
    note: str | None = None
    """Why the list is incomplete (cut at a cap, a repeated cursor, too many pages)."""
    error: Exception | None = None
    """Why the fetch failed; a :class:`HubError` but for failures of host_bridge itself."""
    gone: bool = False
    """Dropped: the server stopped, or a newer snapshot replaced it twice over."""
    scope: anyio.CancelScope | None = None
    """Cancels its fetch."""

    def page_end(self, offset: int) -> int | None:
        """Where the server's page that holds resource ``offset`` ends, once that page has arrived."""
        index = bisect.bisect_right(self.page_ends, offset)
        return self.page_ends[index] if index < len(self.page_ends) else None

    def same_list(self, other: Snapshot) -> bool:
        """Whether ``other`` holds the same resources and the same note."""
        return self.note == other.note and self.items == other.items


@dataclass(eq=False)
class _Entry:
    """What the cache holds of one server."""

    current: Snapshot | None = None
    """What a listing that begins now reads; ``None`` when nothing is kept (the next listing fetches)."""
    previous: Snapshot | None = None
    """The snapshot ``current`` replaced, or a failed one, kept for the listings that read it."""
    fresh: Snapshot | None = None
    """A refresh under way, shown only if it differs from ``current`` once complete."""
    again: bool = False
    """The list changed while ``current`` was fetched: fetch it again once that ends."""
    roots: tuple[str, ...] | None = None
    """The roots the server was last answered, by URI."""
    asked_again: float = -math.inf
    """When the server was last asked again behind a listing (the cache's clock)."""


class ResourceCache:
    """The kept resource lists of the broker's servers (see the module's description)."""

    def __init__(
        self,
        sources: ResourceSources,
        settings: ResourceSettings,
        *,
        on_changed: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``on_changed(server)`` is called when a refetch the editor was not told about brought a different list."""
        self._sources = sources
        self._settings = settings
        self._on_changed = on_changed
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._generations = itertools.count(1)
        self._tasks: anyio.abc.TaskGroup | None = None
        self._progress = anyio.Event()

    async def run(self) -> None:
        """Fetch in the background until cancelled (the broker runs this). Without it, a listing fetches in its own
        task, and nothing is fetched ahead."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                await anyio.sleep_forever()
            finally:
                self._tasks = None

    @property
    def progress(self) -> anyio.Event:
        """Set (and replaced) whenever a snapshot grows, ends or is dropped: take it before looking, then wait."""
        return self._progress

    # What the hub and the broker report.

    def server_running(self, server_id: str, *, listening: bool = False) -> None:
        """The server is running: fetch its list now, unless one is kept or under way (or it has no resources).

        A 2026-07-28 server that declares ``listChanged`` tells of changes only through its listen stream: it is
        listed once that stream is open (``listening``), so that no change between the list and the stream is
        missed.
        """
        if self._tasks is None:
            return
        try:
            client = self._sources.client(server_id)
        except HubError:
            return
        capability = client.server_capabilities.resources
        if capability is None:
            return
        if capability.list_changed and is_modern_version(client.protocol_version) and not listening:
            return
        entry = self._entries.setdefault(server_id, _Entry())
        if entry.current is None:
            self._replace(server_id, entry, "started")

    def forget(self, server_id: str) -> None:
        """The server stopped running: drop everything kept of it and cancel its fetches."""
        entry = self._entries.pop(server_id, None)
        if entry is not None:
            for snapshot in (entry.current, entry.previous, entry.fresh):
                _drop(snapshot)
            self._poke()

    def invalidate(self, server_id: str, reason: Literal["changed", "roots"]) -> None:
        """The server's list may have changed: listings that begin from now on read a new fetch, made now after its
        notification (``changed``), by the next listing after a change of its roots (``roots``).

        After a change of roots nothing fetched before it is handed out any more, not even to a listing under way
        (it ends for this server with a note): the change may have revoked a folder those resources came from.
        """
        entry = self._entries.get(server_id)
        if entry is None:
            return
        if reason == "roots":
            self._drop_all(entry)
            return
        if entry.current is None:
            return  # nothing kept: the next listing fetches anyway
        _drop(entry.fresh)
        entry.fresh = None
        if not entry.current.done:
            entry.again = True
            return
        self._replace(server_id, entry, "changed")

    def roots_answered(self, server_id: str, roots: tuple[str, ...]) -> None:
        """The server was answered ``roots`` (URIs): a list fetched with other roots is dropped (and the editor told
        its list changed, if one was kept); one being fetched when the server got its first roots is fetched again."""
        entry = self._entries.get(server_id)
        if entry is None:
            entry = self._entries[server_id] = _Entry()
        before, entry.roots = entry.roots, roots
        if before is None:
            # Listed before it had any roots, so nothing in the list came from a folder: listings under way may
            # finish it, the next one asks again.
            if entry.current is not None and not entry.current.done:
                entry.again = True
            elif entry.current is not None:
                self._retire(entry)
        elif before != roots:
            kept = entry.current is not None or entry.previous is not None
            self._drop_all(entry)
            if kept:
                self._changed(server_id)

    # What listings read.

    async def open(self, server_id: str, *, revalidate: bool) -> Snapshot:
        """The snapshot a listing of ``server_id`` that begins now reads (fetched now if nothing is kept).

        With ``revalidate`` (the server does not say when its list changes) a kept list older than
        ``revalidate_after`` is fetched again in the background. Without :meth:`run`, the fetch happens here.
        """
        entry = self._entries.get(server_id)
        if entry is None:
            entry = self._entries[server_id] = _Entry()
        snapshot = entry.current
        if snapshot is None:
            snapshot = self._replace(server_id, entry, "started")
        elif (
            revalidate
            and self._tasks is not None
            and snapshot.done
            and entry.fresh is None
            and not entry.again
            and self._clock() - max(snapshot.finished, entry.asked_again) >= self._settings.revalidate_after
        ):
            _drop(entry.previous)
            entry.previous = None
            entry.asked_again = self._clock()
            entry.fresh = self._new(server_id, "revalidate")
            self._start(entry.fresh)
        snapshot.asked = True
        if self._tasks is None and not snapshot.running:
            await self._fetch(snapshot)
        return snapshot

    def find(self, server_id: str, generation: int) -> Snapshot | None:
        """The snapshot a listing under way reads, if it is still kept."""
        entry = self._entries.get(server_id)
        if entry is None:
            return None
        for snapshot in (entry.current, entry.previous):
            if snapshot is not None and snapshot.generation == generation:
                return snapshot
        return None

    # Fetching.

    def _new(self, server_id: str, reason: Reason) -> Snapshot:
        return Snapshot(server=server_id, generation=next(self._generations), reason=reason)

    def _replace(self, server_id: str, entry: _Entry, reason: Reason) -> Snapshot:
        """Make a new snapshot ``current`` and start fetching it; the one it replaces stays for its listings."""
        snapshot = self._new(server_id, reason)
        if entry.current is not None:
            _drop(entry.previous)
            entry.previous = entry.current
        entry.current = snapshot
        entry.again = False
        self._start(snapshot)
        self._poke()
        return snapshot

    def _retire(self, entry: _Entry) -> None:
        """Keep ``current`` only for the listings that read it: the next listing fetches anew."""
        _drop(entry.previous)
        entry.previous, entry.current = entry.current, None
        entry.again = False

    def _drop_all(self, entry: _Entry) -> None:
        """Drop every snapshot of ``entry`` (their fetches cancelled, their listings ended): the next listing
        fetches anew."""
        for snapshot in (entry.current, entry.previous, entry.fresh):
            _drop(snapshot)
        entry.current = entry.previous = entry.fresh = None
        entry.again = False
        self._poke()

    def _start(self, snapshot: Snapshot) -> None:
        if self._tasks is not None:
            self._tasks.start_soon(self._fetch, snapshot, name=f"resources/list of {snapshot.server}")

    async def _fetch(self, snapshot: Snapshot) -> None:
        """Fetch ``snapshot`` to its end; its failure is kept in it, never raised."""
        if snapshot.running or snapshot.gone:
            return
        snapshot.running = True
        completed = False
        try:
            with anyio.CancelScope() as scope:
                snapshot.scope = scope
                try:
                    await self._walk(snapshot)
                except HubError as error:
                    snapshot.error = error
                except Exception as error:
                    logger.exception("listing the resources of %r failed", snapshot.server)
                    snapshot.error = error
                completed = True
        finally:
            if not completed and snapshot.error is None:
                snapshot.error = UpstreamError(snapshot.server, "listing its resources was cancelled")
            snapshot.done = True
            snapshot.finished = self._clock()
            if not snapshot.gone:
                self._fetched(snapshot)
            self._poke()

    async def _walk(self, snapshot: Snapshot) -> None:
        server = snapshot.server
        client = self._sources.client(server)
        if client.server_capabilities.resources is None:
            return
        settings = self._settings
        walk = UpstreamWalk(server=server)
        while not walk.done:
            try:
                result = await client.list_resources(cursor=walk.cursor)
            except MCPError as error:
                if error.code == types.METHOD_NOT_FOUND:
                    return
                if snapshot.asked:
                    raise upstream(self._sources, server, error, "resources/list", client) from error
                raise upstream_error(server, error, "resources/list", client) from error
            except ValidationError as error:
                raise UpstreamError(server, "sent an invalid resources/list result") from error
            if snapshot.gone:
                return
            cut = None
            page = result.resources
            room = settings.max_listed_resources - len(snapshot.items)
            if len(page) > room:
                page, cut = page[:room], f"more than {settings.max_listed_resources} resources"
            items = [resource_item(server, resource) for resource in page]
            sizes = [wire_size(item) for item in items]
            size = sum(sizes)
            if snapshot.size + size > settings.max_listed_bytes:
                size = 0
                for count, item_size in enumerate(sizes):
                    if snapshot.size + size + item_size > settings.max_listed_bytes:
                        del items[count:]
                        break
                    size += item_size
                cut = f"more than {settings.max_listed_bytes / 2**20:g} MiB of resources"
            snapshot.items.extend(items)
            snapshot.size += size
            snapshot.page_ends.append(len(snapshot.items))
            note = walk.advance(result.next_cursor, "resources", settings.max_pages)
            if cut is not None:
                walk.done = True
                note = f"MCP server {server!r} lists {cut}; only the first {len(snapshot.items)} are listed"
            snapshot.note = note
            self._poke()

    def _fetched(self, snapshot: Snapshot) -> None:
        """A fetch ended: show a refresh that differs, fetch again after a change, tell the editor of news."""
        entry = self._entries.get(snapshot.server)
        if entry is None:
            return
        if snapshot is entry.fresh:
            entry.fresh = None
            current = entry.current
            if snapshot.error is not None or current is None or snapshot.same_list(current):
                return
            _drop(entry.previous)
            entry.previous, entry.current = current, snapshot
            self._changed(snapshot.server)
            return
        if snapshot is not entry.current:
            return
        replaced = entry.previous
        if entry.again:
            self._replace(snapshot.server, entry, "again")
        elif snapshot.error is not None:
            # Kept for the listings that read it (they report a failure); the next listing asks the server again.
            self._retire(entry)
        elif snapshot.reason == "again" and replaced is not None and not snapshot.same_list(replaced):
            self._changed(snapshot.server)

    def _changed(self, server_id: str) -> None:
        if self._on_changed is not None:
            try:
                self._on_changed(server_id)
            except Exception:
                logger.exception("the resource list change callback failed")

    def _poke(self) -> None:
        self._progress.set()
        self._progress = anyio.Event()


def _drop(snapshot: Snapshot | None) -> None:
    """Forget ``snapshot``: its fetch is cancelled and listings that read it end."""
    if snapshot is not None:
        snapshot.gone = True
        if snapshot.scope is not None:
            snapshot.scope.cancel()
