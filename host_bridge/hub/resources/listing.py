"""Listing resources and templates across servers, one page per server per call, behind opaque cursors.

Aggregated listings fetch the next page of every unfinished server concurrently, and a failing server becomes a
warning instead of failing the listing. Display fields are sanitized; URIs are kept verbatim.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from pydantic import BaseModel, ValidationError

from host_bridge.hub.errors import HubError, UpstreamError
from host_bridge.hub.resources.cursors import CursorSigner, CursorState, Walk
from host_bridge.hub.resources.labels import sanitize_label, sanitize_optional
from host_bridge.hub.resources.models import ResourceItem, ResourcePage, ResourceSettings, TemplateItem
from host_bridge.hub.resources.sources import ResourceSources, upstream
from host_bridge.hub.resources.templates import TemplateError, parse

logger = logging.getLogger(__name__)


class Listing:
    """Resource and template listings of the broker's servers."""

    def __init__(self, sources: ResourceSources, settings: ResourceSettings) -> None:
        self._sources = sources
        self._settings = settings
        self._cursors = CursorSigner()

    async def list_resources(
        self, server: str | None = None, cursor: str | None = None, query: str | None = None
    ) -> ResourcePage:
        """One page of resources: the next page of every unfinished server, fetched concurrently.

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
        walks = [walk for walk in state.walks if not walk.done]
        pages: list[tuple[list[ResourceItem], str | None]] = [([], None)] * len(walks)
        if server is not None:
            for index, walk in enumerate(walks):
                pages[index] = await self._resource_page(walk)
        else:

            async def fetch(index: int, walk: Walk) -> None:
                pages[index] = await self._tolerant_resource_page(walk)

            async with anyio.create_task_group() as tasks:
                for index, walk in enumerate(walks):
                    tasks.start_soon(fetch, index, walk)
        needle = query.casefold() if query else None
        items = [item for page, _ in pages for item in page if needle is None or _matches(item, needle)]
        notes = tuple(note for _, note in pages if note is not None)
        next_cursor = None if all(walk.done for walk in state.walks) else self._cursors.encode(state)
        return ResourcePage(items=tuple(items), next_cursor=next_cursor, warnings=notes)

    async def list_all(self, server: str) -> tuple[ResourceItem, ...]:
        """Every resource of one server, walking all pages (bounded like :meth:`list_resources`)."""
        walk = Walk(server=server)
        items: list[ResourceItem] = []
        while not walk.done:
            page, note = await self._resource_page(walk)
            items.extend(page)
            if note is not None:
                logger.warning("%s", note)
        return tuple(items)

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

    async def _resource_page(self, walk: Walk) -> tuple[list[ResourceItem], str | None]:
        """Fetch the next page of ``walk`` and advance it; returns the items and a warning, if any."""
        client = self._sources.client(walk.server)
        if client.server_capabilities.resources is None:
            walk.done = True
            return [], None
        try:
            result = await client.list_resources(cursor=walk.cursor)
        except MCPError as error:
            if error.code == types.METHOD_NOT_FOUND:
                walk.done = True
                return [], None
            raise upstream(self._sources, walk.server, error, "resources/list", client) from error
        except ValidationError as error:
            raise UpstreamError(walk.server, "sent an invalid resources/list result") from error
        items = [_resource_item(walk.server, resource) for resource in result.resources]
        return items, walk.advance(result.next_cursor, "resources", self._settings.max_pages)

    async def _all_templates(self, server_id: str) -> list[TemplateItem]:
        client = self._sources.client(server_id)
        if client.server_capabilities.resources is None:
            return []
        walk = Walk(server=server_id)
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
            items.extend(_template_item(server_id, template) for template in result.resource_templates)
            note = walk.advance(result.next_cursor, "resource templates", self._settings.max_pages)
            if note is not None:
                logger.warning("%s", note)
        return items

    async def _tolerant_resource_page(self, walk: Walk) -> tuple[list[ResourceItem], str | None]:
        """:meth:`_resource_page`, with a failure turned into a warning that ends the walk."""
        try:
            return await self._resource_page(walk)
        except HubError as error:
            walk.done = True
            return [], f"{error.message} (its resources are not listed)"
        except Exception:
            logger.exception("listing the resources of %r failed", walk.server)
            walk.done = True
            return [], f"MCP server {walk.server!r}: listing its resources failed unexpectedly; see the log"


def _resource_item(server: str, resource: types.Resource) -> ResourceItem:
    return ResourceItem(
        server=server,
        uri=resource.uri,
        name=sanitize_label(resource.name),
        title=sanitize_optional(resource.title),
        description=sanitize_optional(resource.description),
        mime_type=resource.mime_type,
        size=resource.size,
        annotations=_dump(resource.annotations),
        icons=tuple(_dump_required(icon) for icon in resource.icons) if resource.icons is not None else None,
    )


def _template_item(server: str, template: types.ResourceTemplate) -> TemplateItem:
    try:
        variables = parse(template.uri_template).variables
    except TemplateError as error:
        logger.warning("[%s] resource template %r cannot be parsed: %s", server, template.uri_template, error)
        variables = ()
    return TemplateItem(
        server=server,
        uri_template=template.uri_template,
        name=sanitize_label(template.name),
        title=sanitize_optional(template.title),
        description=sanitize_optional(template.description),
        mime_type=template.mime_type,
        variables=variables,
        annotations=_dump(template.annotations),
        icons=tuple(_dump_required(icon) for icon in template.icons) if template.icons is not None else None,
    )


def _matches(item: ResourceItem, needle: str) -> bool:
    fields = (item.name, item.title, item.uri, item.description)
    return any(value is not None and needle in value.casefold() for value in fields)


def _dump(model: BaseModel | None) -> dict[str, Any] | None:
    return None if model is None else _dump_required(model)


def _dump_required(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
