"""Listing resources and templates across servers, behind opaque cursors.

Resources are read from :mod:`~host_bridge.hub.resources.cache`, which fetches each server's list once and keeps it;
a listing reads every server's kept list at once, and a failing server becomes a warning instead of failing the
listing. Templates are asked for at each listing. Display fields are sanitized; URIs are kept verbatim.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TypeVar

import anyio
import mcp_types as types
from mcp import MCPError
from pydantic import ValidationError

from host_bridge.hub.errors import HubError, UpstreamError
from host_bridge.hub.resources.cache import ResourceCache, Snapshot
from host_bridge.hub.resources.cursors import CursorSigner, CursorState, UpstreamWalk, Walk
from host_bridge.hub.resources.items import template_item
from host_bridge.hub.resources.models import ResourceItem, ResourcePage, ResourceSettings, TemplateItem
from host_bridge.hub.resources.sources import ResourceSources, upstream

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


class _Replaced(Exception):
    """The list a listing under way reads is no longer kept, although its server runs (two newer lists replaced it,
    or the server restarted)."""


class Listing:
    """Resource and template listings of the broker's servers."""

    def __init__(self, sources: ResourceSources, settings: ResourceSettings, cache: ResourceCache) -> None:
        self._sources = sources
        self._settings = settings
        self._cache = cache
        self._cursors = CursorSigner()

    async def list_resources(
        self, server: str | None = None, cursor: str | None = None, query: str | None = None, limit: int | None = None
    ) -> ResourcePage:
        """One page of resources of ``server``, or of every resource server.

        Without ``limit``, the page holds the next page of every unfinished server as the server paged it (waiting
        for each). With ``limit``, it holds at most that many (and at most ``max_page_resources``), shared out
        evenly between the servers that have some, as soon as any has: a page of a list still being fetched may be
        short, and the next one waits for more.

        Aggregated across :meth:`ResourceSources.resource_servers` when ``server`` is None; then a failing
        server becomes a warning. With a ``server``, its errors are raised. ``query`` keeps items whose name,
        title, URI or description contains it, ignoring case. Raises :class:`InvalidRequestError` for a cursor
        that this broker did not issue for the same ``server``.
        """
        if cursor is None:
            ids = [server] if server is not None else list(self._sources.resource_servers())
            state = CursorState(server=server, walks=[Walk(server=server_id) for server_id in ids])
        else:
            state = self._cursors.decode(cursor, server)
        notes: list[str] = []
        reading: list[tuple[Walk, Snapshot]] = []
        for walk in state.walks:
            if walk.done:
                continue
            snapshot = await self._tolerant(walk, notes, server is not None, self._snapshot(walk))
            if snapshot is None:
                walk.done = True
            else:
                reading.append((walk, snapshot))
        if limit is not None:
            limit = min(limit, self._settings.max_page_resources)
        items = await self._take(reading, limit, notes, server is not None)
        needle = query.casefold() if query else None
        if needle is not None:
            items = [item for item in items if _matches(item, needle)]
        next_cursor = None if all(walk.done for walk in state.walks) else self._cursors.encode(state)
        return ResourcePage(items=tuple(items), next_cursor=next_cursor, warnings=tuple(notes))

    async def list_all(self, server: str) -> tuple[ResourceItem, ...]:
        """Every resource of one server (bounded like :meth:`list_resources`); a warning is logged."""
        items: list[ResourceItem] = []
        cursor: str | None = None
        while True:
            page = await self.list_resources(server, cursor, limit=self._settings.max_page_resources)
            items.extend(page.items)
            for note in page.warnings:
                logger.warning("%s", note)
            cursor = page.next_cursor
            if cursor is None:
                return tuple(items)

    async def _snapshot(self, walk: Walk) -> Snapshot | None:
        """The kept list ``walk`` reads (``None``: the server has no resources); raises the server's error when it
        does not run, :class:`_Replaced` when that list is no longer kept."""
        client = self._sources.client(walk.server)
        capability = client.server_capabilities.resources
        if capability is None:
            return None
        if walk.generation == 0:
            snapshot = await self._cache.open(walk.server, revalidate=not capability.list_changed)
            walk.generation = snapshot.generation
            return snapshot
        snapshot = self._cache.find(walk.server, walk.generation)
        if snapshot is None or snapshot.gone:
            self._sources.client(walk.server)  # a server that stopped says so
            raise _Replaced
        return snapshot

    async def _take(
        self, reading: list[tuple[Walk, Snapshot]], limit: int | None, notes: list[str], single: bool
    ) -> list[ResourceItem]:
        """The next resources of each walk (see :meth:`list_resources`), advancing it; its end adds its note."""
        while True:
            progress = self._cache.progress
            if all(snapshot.done for _, snapshot in reading) or any(snapshot.gone for _, snapshot in reading):
                break
            if limit is None:
                if all(_ready(walk, snapshot) for walk, snapshot in reading):
                    break
            elif any(len(snapshot.items) > walk.offset for walk, snapshot in reading):
                break
            await progress.wait()
        if limit is None:
            ends = [snapshot.page_end(walk.offset) or len(snapshot.items) for walk, snapshot in reading]
        else:
            shares = _shares([max(0, len(snapshot.items) - walk.offset) for walk, snapshot in reading], limit)
            ends = [walk.offset + share for (walk, _), share in zip(reading, shares, strict=True)]
        items: list[ResourceItem] = []
        for (walk, snapshot), end in zip(reading, ends, strict=True):
            if snapshot.gone:
                await self._tolerant(walk, notes, single, self._gone(walk))
                walk.done = True
                continue
            taken = snapshot.items[walk.offset : end]
            items.extend(taken)
            walk.offset += len(taken)
            if not snapshot.done or walk.offset < len(snapshot.items):
                continue
            if snapshot.error is not None:
                if taken and single:
                    continue  # the failure is raised with the next page, so these resources are not lost
                walk.done = True
                if single:
                    raise snapshot.error
                notes.append(_failure_note(walk.server, snapshot.error))
            else:
                walk.done = True
                if snapshot.note is not None:
                    notes.append(snapshot.note)
        return items

    async def _gone(self, walk: Walk) -> None:
        """The list ``walk`` read was dropped: the server's error if it stopped, else :class:`_Replaced`."""
        self._sources.client(walk.server)
        raise _Replaced

    async def _tolerant(self, walk: Walk, notes: list[str], single: bool, step: Awaitable[_T]) -> _T | None:
        """The result of ``step``, which reads ``walk``; its failure ends the walk: raised for a single server (but
        for a replaced list), else a warning (and ``None``)."""
        try:
            return await step
        except _Replaced:
            walk.done = True
            notes.append(f"MCP server {walk.server!r} changed its list of resources while it was listed; list it again")
            return None
        except HubError as error:
            if single:
                raise
            walk.done = True
            notes.append(_failure_note(walk.server, error))
            return None

    async def list_templates(self, server: str | None = None) -> tuple[TemplateItem, ...]:
        """Every resource template of one server, or of all resource servers (failures then logged and skipped)."""
        if server is not None:
            return tuple(await self._all_templates(server))
        ids = list(self._sources.resource_servers())
        results: list[list[TemplateItem]] = [[] for _ in ids]

        async def fetch(index: int, server_id: str) -> None:
            try:
                results[index] = await self._all_templates(server_id)
            except HubError as error:
                logger.warning("resource templates left out: %s", error.message)
            except Exception:
                logger.exception("resource templates of %r left out: unexpected failure", server_id)

        async with anyio.create_task_group() as tasks:
            for index, server_id in enumerate(ids):
                tasks.start_soon(fetch, index, server_id)
        return tuple(item for items in results for item in items)

    async def _all_templates(self, server_id: str) -> list[TemplateItem]:
        client = self._sources.client(server_id)
        if client.server_capabilities.resources is None:
            return []
        walk = UpstreamWalk(server=server_id)
        items: list[TemplateItem] = []
        while not walk.done:
            try:
                result = await client.list_resource_templates(cursor=walk.cursor)
            except MCPError as error:
                if error.code == types.METHOD_NOT_FOUND:
                    return items
                raise upstream(self._sources, server_id, error, "resources/templates/list", client) from error
            except ValidationError as error:
                raise UpstreamError(server_id, "sent an invalid resources/templates/list result") from error
            items.extend(template_item(server_id, template) for template in result.resource_templates)
            note = walk.advance(result.next_cursor, "resource templates", self._settings.max_pages)
            if note is not None:
                logger.warning("%s", note)
        return items


def _ready(walk: Walk, snapshot: Snapshot) -> bool:
    """Whether the server's next page for ``walk`` has arrived (or there is none)."""
    return snapshot.gone or snapshot.done or snapshot.page_end(walk.offset) is not None


def _shares(available: list[int], limit: int) -> list[int]:
    """``limit`` shared out evenly between walks with ``available`` resources each; what one cannot use goes to the
    others."""
    shares = [0] * len(available)
    left = limit
    open_ = [index for index, count in enumerate(available) if count > 0]
    while left > 0 and open_:
        each = max(1, left // len(open_))
        for index in list(open_):
            give = min(each, available[index] - shares[index], left)
            shares[index] += give
            left -= give
            if shares[index] == available[index]:
                open_.remove(index)
            if left == 0:
                break
    return shares


def _failure_note(server: str, error: Exception) -> str:
    if isinstance(error, HubError):
        return f"{error.message} (its resources are not listed)"
    return f"MCP server {server!r}: listing its resources failed unexpectedly; see the log"


def _matches(item: ResourceItem, needle: str) -> bool:
    fields = (item.name, item.title, item.uri, item.description)
    return any(value is not None and needle in value.casefold() for value in fields)
