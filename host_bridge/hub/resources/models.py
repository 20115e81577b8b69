"""What the resource broker answers, as the editor receives it, and the broker's limits.

These are wire models (docs/protocol.md, "Shapes"): the editor channel's message table and the TypeScript generator
read them without loading the ``mcp`` SDK, so this module never imports it (docs/architecture.md, "Architecture
invariants"; checked by import-linter).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from host_bridge.hub.errors import InvalidRequestError
from host_bridge.wire import WireModel


class ResourceSettings(WireModel):
    """Limits of the broker; every field has a safe default."""

    max_read_bytes: int = Field(default=16 * 2**20, gt=0)
    """Largest decoded size of one read (all its contents together)."""
    max_pages: int = Field(default=1000, gt=0)
    """Most pages fetched from one server in one listing walk."""
    max_listed_resources: int = Field(default=50_000, gt=0)
    """Most resources kept of one server's list (:mod:`~host_bridge.hub.resources.cache`); a longer list is cut there,
    with a warning."""
    max_listed_bytes: int = Field(default=32 * 2**20, gt=0)
    """Most bytes kept of one server's list, counted as the JSON the editor receives (near enough); a bigger list is
    cut there, with a warning."""
    max_page_resources: int = Field(default=10_000, gt=0)
    """Most resources in one page of a listing, whatever ``limit`` the editor asks for."""
    revalidate_after: float = Field(default=1.0, ge=0)
    """Seconds a kept list of a server that does not declare ``listChanged`` is shown without asking the server again
    when a listing begins (it is asked in the background, and the editor told if its list changed)."""
    max_uri_length: int = Field(default=65_536, gt=0)
    """Longest URI sent to a server (expanded templates included)."""
    update_interval: float = Field(default=0.1, ge=0)
    """Seconds between two deliveries of the same pending notification (the coalescing window)."""
    max_updates_per_second: float = Field(default=200, gt=0)
    """Updates per second for one URI which, sustained over 5 s, get the URI unsubscribed."""

    def check_uri_length(self, uri: str) -> None:
        """Raise :class:`InvalidRequestError` for a URI over :attr:`max_uri_length`."""
        if len(uri) > self.max_uri_length:
            raise InvalidRequestError(
                f"the URI is {len(uri)} characters long, over the limit of {self.max_uri_length}",
                data={"length": len(uri), "limit": self.max_uri_length},
            )


class ResourceItem(WireModel):
    """One resource in a picker (docs/protocol.md ``ResourceItem``)."""

    server: str
    """Id of the server that listed it; reads go to this server only."""
    uri: str
    """The resource's URI, verbatim: a name in that server's namespace, never resolved locally."""
    name: str
    """Sanitized name."""
    title: str | None = None
    """Sanitized display title."""
    description: str | None = None
    """Sanitized description."""
    mime_type: str | None = None
    """Declared MIME type, a label only."""
    size: int | None = None
    """Declared size in bytes, if the server knows it."""
    annotations: dict[str, Any] | None = None
    """The server's annotations (audience, priority, lastModified), as sent."""
    icons: tuple[dict[str, Any], ...] | None = None
    """The server's icons, as sent."""


class ResourcePage(WireModel):
    """One page of an aggregated listing."""

    items: tuple[ResourceItem, ...]
    """The resources of this page, servers in configuration order."""
    next_cursor: str | None = None
    """Opaque cursor of the next page; absent when every server is done."""
    warnings: tuple[str, ...] = ()
    """Sentences about servers left out or cut short (failures, endless pagination)."""


class TemplateItem(WireModel):
    """One resource template (docs/protocol.md ``TemplateItem``)."""

    server: str
    """Id of the server that listed it."""
    uri_template: str
    """The RFC 6570 template, verbatim."""
    name: str
    """Sanitized name."""
    title: str | None = None
    """Sanitized display title."""
    description: str | None = None
    """Sanitized description."""
    mime_type: str | None = None
    """Declared MIME type, a label only."""
    variables: tuple[str, ...] = ()
    """Names of the template's variables in order of first appearance, whatever their operator (RFC 6570 level
    4); empty when the template cannot be parsed."""
    annotations: dict[str, Any] | None = None
    """The server's annotations (audience, priority, lastModified), as sent."""
    icons: tuple[dict[str, Any], ...] | None = None
    """The server's icons, as sent."""


class Completion(WireModel):
    """Suggested values for one template argument."""

    values: tuple[str, ...] = ()
    """At most 100 suggestions."""
    total: int | None = None
    """How many suggestions the server has in all, if it said."""
    has_more: bool | None = None
    """More suggestions exist than were returned."""


class Content(WireModel):
    """One content item of a read: text or a base64 blob."""

    uri: str
    """The URI it belongs to (always the URI that was read)."""
    mime_type: str | None = None
    """The server's MIME type, a label only: never a reason to render the content."""
    text: str | None = None
    """Text content."""
    blob: str | None = None
    """Binary content, base64 as the server sent it (validated)."""


class ReadResult(WireModel):
    """The answer to ``hostBridge/readResource``."""

    uri: str
    """The URI that was read (the expansion, for a template read)."""
    contents: tuple[Content, ...]
    """Its contents; never empty."""
