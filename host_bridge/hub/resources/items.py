"""A server's resources and templates as the editor receives them: labels sanitized, URIs verbatim."""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from pydantic import BaseModel

from host_bridge.hub.resources.labels import sanitize_label, sanitize_optional
from host_bridge.hub.resources.models import ResourceItem, TemplateItem
from host_bridge.hub.resources.templates import TemplateError, parse

logger = logging.getLogger(__name__)

_ITEM_OVERHEAD = 64
"""Bytes of JSON around an item's strings (keys, quotes, commas) in :func:`wire_size`, near enough."""
_FIELD_OVERHEAD = 16
"""Bytes of JSON around one optional field's value."""


def resource_item(server: str, resource: types.Resource) -> ResourceItem:
    """``resource`` as ``server`` listed it."""
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


def template_item(server: str, template: types.ResourceTemplate) -> TemplateItem:
    """``template`` as ``server`` listed it, with the names of its variables."""
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


def wire_size(item: ResourceItem) -> int:
    """About how many bytes of JSON ``item`` is on the editor's wire (characters, not escapes, are counted)."""
    size = _ITEM_OVERHEAD + len(item.server) + len(item.uri) + len(item.name)
    for text in (item.title, item.description, item.mime_type):
        if text is not None:
            size += _FIELD_OVERHEAD + len(text)
    if item.size is not None:
        size += _FIELD_OVERHEAD
    if item.annotations is not None:
        size += _FIELD_OVERHEAD + len(repr(item.annotations))
    if item.icons is not None:
        size += _FIELD_OVERHEAD + len(repr(item.icons))
    return size


def _dump(model: BaseModel | None) -> dict[str, Any] | None:
    return None if model is None else _dump_required(model)


def _dump_required(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
