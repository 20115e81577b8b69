"""Resources of every running MCP server, brought together for the editor's pickers.

:class:`ResourceBroker` lists resources and templates across servers (one page per server per call, behind an
opaque cursor), completes template arguments, expands templates, reads resources within a size cap, and keeps
resource subscriptions: handshake-era servers through ``resources/subscribe`` and 2026-07-28 servers through a
``subscriptions/listen`` stream. Update and list-changed notifications are coalesced before they reach the
editor, and a URI that floods is unsubscribed.

What servers send is untrusted: display fields are sanitized, URIs are kept verbatim and only ever sent back to
the server that named them, reads are bounded and base64 is validated.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import math
import re
import secrets
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, InputRequiredRoundsExceededError, MCPDeprecationWarning, MCPError
from mcp.client.subscriptions import Subscription, SubscriptionLost
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from host_bridge.hub.errors import (
    HubError,
    InvalidRequestError,
    ResourceNotFoundError,
    ResourceTooLargeError,
    UpstreamError,
)
from host_bridge.hub.limits import ANSWER_OVER_LIMIT
from host_bridge.wire import WireModel

logger = logging.getLogger(__name__)

MAX_COMPLETION_VALUES = 100
"""The spec's maximum number of values in one ``completion/complete`` answer."""

_FIRST_MODERN_VERSION = MODERN_PROTOCOL_VERSIONS[0]
_NOT_FOUND_CODES = frozenset({-32002, types.INVALID_PARAMS})
_CURSOR_HASH_CHARS = 12
_CURSOR_MAC_BYTES = 16
_FLOOD_SECONDS = 5
_RELISTEN_DELAY = 1.0
_RELISTEN_MAX_DELAY = 30.0
_UPSTREAM_MESSAGE_CHARS = 300
_SLICE = 2**16
"""Characters checked at a time when sizing a big text or blob (a multiple of 4, for base64)."""

_TERMINAL_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI, e.g. colours
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, e.g. hyperlinks and window titles
    r"|\x1b[@-Z\\-_]"  # other two-character escapes
)
_LINE_BREAK = re.compile(r"[\t\n\x0b\x0c\r\x85\u2028\u2029]+")
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
"""Any character one of the patterns above would touch: most labels have none and are returned as they are."""


def sanitize_label(text: str) -> str:
    """``text`` fit for a picker label: terminal escape sequences, C0/C1 controls and bidi controls removed.

    Line breaks and tabs become single spaces so words stay apart.
    """
    if not _ANY_CONTROL.search(text):
        return text
    text = _TERMINAL_SEQUENCE.sub("", text)
    text = _LINE_BREAK.sub(" ", text)
    return _INVISIBLE.sub("", text)


def _sanitize_optional(text: str | None) -> str | None:
    return None if text is None else sanitize_label(text)


def _upstream_text(text: str) -> str:
    """A server's error message, safe and short enough to show."""
    text = sanitize_label(text)
    return text if len(text) <= _UPSTREAM_MESSAGE_CHARS else text[: _UPSTREAM_MESSAGE_CHARS - 1] + "…"


def is_modern_version(protocol_version: str) -> bool:
    """Whether ``protocol_version`` is of the 2026-07-28 era (no handshake, ``subscriptions/listen``)."""
    return protocol_version >= _FIRST_MODERN_VERSION


class ResourceSources(Protocol):
    """Where the broker gets its servers: implemented by the hub over its connections."""

    def resource_servers(self) -> Sequence[str]:
        """Ids of running servers that declared a resources capability, in configuration order."""
        ...

    def client(self, server_id: str) -> Client:
        """The live client; raises UnknownServerError or ServerNotRunningError (host_bridge.hub.errors)."""
        ...

    def report_error(self, server_id: str, error: MCPError) -> None:
        """A request to ``server_id`` failed with ``error`` (the connection may decide to reconnect)."""
        ...

    def protocol_version(self, server_id: str) -> str:
        """The protocol revision negotiated with the server."""
        ...


class ResourceSettings(WireModel):
    """Limits of the broker; every field has a safe default."""

    max_read_bytes: int = Field(default=16 * 2**20, gt=0)
    """Largest decoded size of one read (all its contents together)."""
    max_pages: int = Field(default=1000, gt=0)
    """Most pages fetched from one server in one listing walk."""
    max_uri_length: int = Field(default=65_536, gt=0)
    """Longest URI sent to a server (expanded templates included)."""
    update_interval: float = Field(default=0.1, ge=0)
    """Seconds between two deliveries of the same pending notification (the coalescing window)."""
    max_updates_per_second: float = Field(default=200, gt=0)
    """Updates per second for one URI which, sustained over 5 s, get the URI unsubscribed."""


class ResourceItem(WireModel):
    """One resource in a picker (DESIGN.md ``ResourceItem``)."""

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
    """One resource template (DESIGN.md ``TemplateItem``)."""

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
    """Names of the template's variables in order; empty when the template cannot be parsed."""


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


class _Walk(BaseModel):
    """One server's progress through a paginated listing, carried in the cursor."""

    model_config = ConfigDict(extra="forbid")

    id: str
    c: str | None = None
    """The upstream cursor of the next page; None for the first."""
    n: int = Field(default=0, ge=0)
    """Pages fetched so far."""
    h: str = Field(default="", pattern=r"^[0-9a-f]*$")
    """Short hashes of the upstream cursors seen, concatenated."""
    d: bool = False
    """The walk is finished (end reached, cut short or failed)."""

    def seen(self, digest: str) -> bool:
        """Whether a cursor with this hash was already handed out."""
        step = _CURSOR_HASH_CHARS
        return any(self.h[i : i + step] == digest for i in range(0, len(self.h), step))


class _CursorState(BaseModel):
    """Everything a listing cursor holds."""

    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = 1
    s: str | None = None
    """The server of a single-server listing; None for an aggregated one."""
    w: list[_Walk]


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
    """Coordination between :meth:`ResourceBroker.serve_subscriptions` and (un)subscribe on a 2026 connection."""

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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``on_updated(server, uri)``, ``on_list_changed(server)`` and ``on_notice(server, message)`` are called
        from :meth:`run`; ``clock`` (seconds) times the flood detection and exists for tests."""
        self.settings = settings or ResourceSettings()
        """The limits in force."""
        self._sources = sources
        self._on_updated = on_updated
        self._on_list_changed = on_list_changed
        self._on_notice = on_notice
        self._clock = clock
        self._cursor_key = secrets.token_bytes(32)
        """Signs listing cursors: a cursor this process did not make is refused."""
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

    # Listing.

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
            state = _CursorState(s=server, w=[_Walk(id=server_id) for server_id in ids])
        else:
            state = self._decode_cursor(cursor, server)
        walks = [walk for walk in state.w if not walk.d]
        pages: list[tuple[list[ResourceItem], str | None]] = [([], None)] * len(walks)
        if server is not None:
            for index, walk in enumerate(walks):
                pages[index] = await self._resource_page(walk)
        else:

            async def fetch(index: int, walk: _Walk) -> None:
                pages[index] = await self._tolerant_resource_page(walk)

            async with anyio.create_task_group() as tasks:
                for index, walk in enumerate(walks):
                    tasks.start_soon(fetch, index, walk)
        needle = query.casefold() if query else None
        items = [item for page, _ in pages for item in page if needle is None or _matches(item, needle)]
        notes = tuple(note for _, note in pages if note is not None)
        next_cursor = None if all(walk.d for walk in state.w) else self._encode_cursor(state)
        return ResourcePage(items=tuple(items), next_cursor=next_cursor, warnings=notes)

    async def list_all(self, server: str) -> tuple[ResourceItem, ...]:
        """Every resource of one server, walking all pages (bounded like :meth:`list_resources`)."""
        walk = _Walk(id=server)
        items: list[ResourceItem] = []
        while not walk.d:
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

    async def _resource_page(self, walk: _Walk) -> tuple[list[ResourceItem], str | None]:
        """Fetch the next page of ``walk`` and advance it; returns the items and a warning, if any."""
        client = self._sources.client(walk.id)
        if client.server_capabilities.resources is None:
            walk.d = True
            return [], None
        try:
            result = await client.list_resources(cursor=walk.c)
        except MCPError as error:
            if error.code == types.METHOD_NOT_FOUND:
                walk.d = True
                return [], None
            raise self._upstream(walk.id, error, "resources/list", client) from error
        except ValidationError as error:
            raise UpstreamError(walk.id, "sent an invalid resources/list result") from error
        items = [_resource_item(walk.id, resource) for resource in result.resources]
        return items, self._advance(walk, result.next_cursor, "resources")

    async def _all_templates(self, server_id: str) -> list[TemplateItem]:
        client = self._sources.client(server_id)
        if client.server_capabilities.resources is None:
            return []
        walk = _Walk(id=server_id)
        items: list[TemplateItem] = []
        while not walk.d:
            try:
                result = await client.list_resource_templates(cursor=walk.c)
            except MCPError as error:
                if error.code == types.METHOD_NOT_FOUND:
                    return items
                raise self._upstream(server_id, error, "resources/templates/list", client) from error
            except ValidationError as error:
                raise UpstreamError(server_id, "sent an invalid resources/templates/list result") from error
            items.extend(_template_item(server_id, template) for template in result.resource_templates)
            note = self._advance(walk, result.next_cursor, "resource templates")
            if note is not None:
                logger.warning("%s", note)
        return items

    def _advance(self, walk: _Walk, next_cursor: str | None, what: str) -> str | None:
        """Move ``walk`` past a fetched page; stop it on the last page, a repeated cursor or the page cap."""
        walk.n += 1
        if not next_cursor:
            walk.d = True
            return None
        digest = hashlib.sha256(next_cursor.encode("utf-8", "surrogatepass")).hexdigest()[:_CURSOR_HASH_CHARS]
        if walk.seen(digest) or next_cursor == walk.c:
            walk.d = True
            return f"MCP server {walk.id!r} repeated a pagination cursor; the list may be incomplete"
        if walk.n >= self.settings.max_pages:
            walk.d = True
            return (
                f"MCP server {walk.id!r} has more than {self.settings.max_pages} pages of {what};"
                " the list may be incomplete"
            )
        walk.h += digest
        walk.c = next_cursor
        return None

    async def _tolerant_resource_page(self, walk: _Walk) -> tuple[list[ResourceItem], str | None]:
        """:meth:`_resource_page`, with a failure turned into a warning that ends the walk."""
        try:
            return await self._resource_page(walk)
        except HubError as error:
            walk.d = True
            return [], f"{error.message} (its resources are not listed)"
        except Exception:
            logger.exception("listing the resources of %r failed", walk.id)
            walk.d = True
            return [], f"MCP server {walk.id!r}: listing its resources failed unexpectedly; see the log"

    def _encode_cursor(self, state: _CursorState) -> str:
        body = state.model_dump_json(exclude_defaults=True).encode()
        mac = hmac.new(self._cursor_key, body, hashlib.sha256).digest()[:_CURSOR_MAC_BYTES]
        return f"{_b64url(body)}.{_b64url(mac)}"

    def _decode_cursor(self, cursor: str, server: str | None) -> _CursorState:
        invalid = InvalidRequestError(
            "the listing cursor is invalid or expired (it must be passed back exactly as received,"
            " to the same listing); start the listing again without a cursor",
            data={"cursor": cursor[:100]},
        )
        body_text, dot, mac_text = cursor.partition(".")
        if not dot:
            raise invalid
        try:
            body = _unb64url(body_text)
            mac = _unb64url(mac_text)
        except (binascii.Error, ValueError):
            raise invalid from None
        expected = hmac.new(self._cursor_key, body, hashlib.sha256).digest()[:_CURSOR_MAC_BYTES]
        if not hmac.compare_digest(mac, expected):
            raise invalid
        try:
            state = _CursorState.model_validate_json(body)
        except ValidationError:
            raise invalid from None
        if state.s != server:
            raise InvalidRequestError(
                "the listing cursor belongs to a different listing (another server filter);"
                " start the listing again without a cursor",
                data={"cursor": cursor[:100]},
            )
        return state

    # Completion, expansion and reading.

    async def complete(
        self, server: str, uri_template: str, name: str, value: str, arguments: Mapping[str, str] | None = None
    ) -> Completion:
        """Suggestions for argument ``name`` of ``uri_template`` given its partial ``value`` and the other
        ``arguments``; empty when the server does not offer completion."""
        client = self._sources.client(server)
        if client.server_capabilities.completions is None:
            return Completion()
        reference = types.ResourceTemplateReference(type="ref/resource", uri=uri_template)
        try:
            result = await client.complete(
                reference, {"name": name, "value": value}, context_arguments=dict(arguments) if arguments else None
            )
        except MCPError as error:
            if error.code == types.METHOD_NOT_FOUND:
                return Completion()
            raise self._upstream(server, error, "completion/complete", client) from error
        except ValidationError as error:
            raise UpstreamError(server, "sent an invalid completion/complete result") from error
        completion = result.completion
        cut = len(completion.values) > MAX_COMPLETION_VALUES
        return Completion(
            values=tuple(completion.values[:MAX_COMPLETION_VALUES]),
            total=completion.total,
            has_more=True if cut else completion.has_more,
        )

    def expand(self, uri_template: str, arguments: Mapping[str, str]) -> str:
        """Expand an RFC 6570 template (the SDK's parser and encoder) with ``arguments``.

        ``{var}`` percent-encodes everything but unreserved characters (``/`` → ``%2F``; ``..`` stays literal),
        ``{+var}`` and ``{#var}`` keep reserved characters, non-ASCII becomes UTF-8 ``%XX``. Every variable
        outside a trailing query expression (``{?q}``, ``{&q}``) is required. Raises
        :class:`InvalidRequestError` for a bad template, a missing argument or a result over ``max_uri_length``.
        """
        try:
            template = UriTemplate.parse(uri_template)
        except InvalidUriTemplate as error:
            raise InvalidRequestError(
                f"the URI template {uri_template!r} is not valid: {error}", data={"uriTemplate": uri_template}
            ) from error
        optional = template.query_variable_names
        missing = [name for name in template.variable_names if name not in arguments and name not in optional]
        if missing:
            raise InvalidRequestError(
                f"missing a value for variable {missing[0]!r} of the URI template {uri_template!r}",
                data={"uriTemplate": uri_template, "missing": missing},
            )
        try:
            uri = template.expand(dict(arguments))
        except TypeError as error:
            raise InvalidRequestError(f"URI template arguments must be strings: {error}") from error
        self._check_uri_length(uri)
        return uri

    async def read(
        self,
        server: str,
        uri: str | None = None,
        *,
        uri_template: str | None = None,
        arguments: Mapping[str, str] | None = None,
    ) -> ReadResult:
        """Read ``uri``, or the expansion of ``uri_template`` with ``arguments``, from ``server`` only.

        Only contents for the requested URI are kept. Raises :class:`ResourceNotFoundError` (the server said
        so, or sent no contents), :class:`ResourceTooLargeError` (decoded size over ``max_read_bytes``) or
        :class:`UpstreamError` (any other failure, invalid base64 included).
        """
        if uri_template is not None:
            if uri is not None:
                raise InvalidRequestError("give either a uri or a uriTemplate with arguments, not both")
            uri = self.expand(uri_template, arguments or {})
        elif uri is None:
            raise InvalidRequestError("give a uri, or a uriTemplate with arguments")
        else:
            self._check_uri_length(uri)
        client = self._sources.client(server)
        try:
            result = await client.read_resource(uri)
        except MCPError as error:
            if error.code in _NOT_FOUND_CODES:
                raise ResourceNotFoundError(server, uri, _upstream_text(error.message)) from error
            raise self._upstream(server, error, f"reading {uri}", client) from error
        except ValidationError as error:
            raise UpstreamError(server, f"sent an invalid result for {uri}") from error
        except InputRequiredRoundsExceededError as error:
            raise UpstreamError(server, f"kept asking for more input while reading {uri}") from error
        return ReadResult(uri=uri, contents=self._checked_contents(server, uri, result))

    def _checked_contents(self, server: str, uri: str, result: types.ReadResourceResult) -> tuple[Content, ...]:
        if not result.contents:
            raise ResourceNotFoundError(server, uri, "the server returned no contents")
        kept = [item for item in result.contents if item.uri == uri]
        if len(kept) < len(result.contents):
            logger.info(
                "[%s] dropped %d content item(s) for other URIs from the read of %s",
                server,
                len(result.contents) - len(kept),
                uri,
            )
        if not kept:
            raise ResourceNotFoundError(server, uri, "the server returned no contents for this URI")
        limit = self.settings.max_read_bytes
        total = 0
        contents: list[Content] = []
        for item in kept:
            if isinstance(item, types.TextResourceContents):
                # One character is at least one byte: a text this long is too large without encoding it.
                if total + len(item.text) > limit:
                    raise ResourceTooLargeError(server, uri, total + len(item.text), limit)
                total += _utf8_size(item.text)
                if total > limit:
                    raise ResourceTooLargeError(server, uri, total, limit)
                contents.append(Content(uri=uri, mime_type=item.mime_type, text=item.text))
            else:
                estimate = len(item.blob) * 3 // 4
                if total + estimate > limit:
                    raise ResourceTooLargeError(server, uri, total + estimate, limit)
                try:
                    total += base64_size(item.blob)
                except ValueError:
                    raise UpstreamError(server, f"returned invalid base64 for {uri}") from None
                contents.append(Content(uri=uri, mime_type=item.mime_type, blob=item.blob))
        return tuple(contents)

    def _check_uri_length(self, uri: str) -> None:
        if len(uri) > self.settings.max_uri_length:
            raise InvalidRequestError(
                f"the URI is {len(uri)} characters long, over the limit of {self.settings.max_uri_length}",
                data={"length": len(uri), "limit": self.settings.max_uri_length},
            )

    # Subscriptions.

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
        self._check_uri_length(uri)
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
            logger.warning("[%s] unsubscribing from %s failed: %s", server, uri, _upstream_text(error.message))

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
            if error.code in _NOT_FOUND_CODES:
                raise ResourceNotFoundError(server, uri, _upstream_text(error.message)) from error
            raise self._upstream(server, error, f"subscribing to {uri}", client) from error

    def _upstream(self, server: str, error: MCPError, action: str, client: Client) -> UpstreamError:
        """Map a failed request to a hub error, and let the server's connection see the failure first."""
        self._sources.report_error(server, error)
        return _upstream_error(server, error, action, client)

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
                        if missed:
                            self._refresh_all(server_id, list_changed)
                            missed = False
                        delay = _RELISTEN_DELAY
                        if await self._pump(server_id, stream, changed) == "changed":
                            continue
                    logger.info("[%s] the server closed its subscription stream; listening again", server_id)
                except (MCPError, SubscriptionLost, TimeoutError) as error:
                    report(generation, _upstream_text(str(error)))
                    logger.warning("[%s] subscription stream failed: %s", server_id, _upstream_text(str(error)))
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
        limit = self.settings.max_updates_per_second
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
        if server_id in self._subscriptions or server_id in self._sources.resource_servers():
            self._pending_lists[server_id] = None
            self._wake_flusher()

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
                await anyio.sleep(self.settings.update_interval)

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


def _upstream_error(server: str, error: MCPError, action: str, client: Client) -> UpstreamError:
    """The hub error for a failed request: timeouts, a lost connection and an answer refused for its size get
    sentences of their own."""
    if error.code == ANSWER_OVER_LIMIT:
        return UpstreamError(server, error.message)
    if error.code == types.REQUEST_TIMEOUT:
        timeout = client.read_timeout_seconds
        within = f"within {timeout:g} s" if timeout is not None else "in time"
        return UpstreamError(server, f"did not answer {within} ({action})", upstream_code=error.code)
    if error.code == types.CONNECTION_CLOSED:
        return UpstreamError(server, f"server exited or closed the connection ({action})", upstream_code=error.code)
    return UpstreamError(
        server, f"{action} failed: {_upstream_text(error.message)} (code {error.code})", upstream_code=error.code
    )


def _resource_item(server: str, resource: types.Resource) -> ResourceItem:
    return ResourceItem(
        server=server,
        uri=resource.uri,
        name=sanitize_label(resource.name),
        title=_sanitize_optional(resource.title),
        description=_sanitize_optional(resource.description),
        mime_type=resource.mime_type,
        size=resource.size,
        annotations=_dump(resource.annotations),
        icons=tuple(_dump_required(icon) for icon in resource.icons) if resource.icons is not None else None,
    )


def _template_item(server: str, template: types.ResourceTemplate) -> TemplateItem:
    try:
        variables = tuple(UriTemplate.parse(template.uri_template).variable_names)
    except InvalidUriTemplate as error:
        logger.warning("[%s] resource template %r cannot be parsed: %s", server, template.uri_template, error)
        variables = ()
    return TemplateItem(
        server=server,
        uri_template=template.uri_template,
        name=sanitize_label(template.name),
        title=_sanitize_optional(template.title),
        description=_sanitize_optional(template.description),
        mime_type=template.mime_type,
        variables=variables,
    )


def _matches(item: ResourceItem, needle: str) -> bool:
    fields = (item.name, item.title, item.uri, item.description)
    return any(value is not None and needle in value.casefold() for value in fields)


def _dump(model: BaseModel | None) -> dict[str, Any] | None:
    return None if model is None else _dump_required(model)


def _dump_required(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def _utf8_size(text: str) -> int:
    """The UTF-8 size of ``text`` (lone surrogates count 3 bytes), without holding an encoded copy."""
    if text.isascii():
        return len(text)
    return sum(
        len(text[start : start + _SLICE].encode("utf-8", "surrogatepass")) for start in range(0, len(text), _SLICE)
    )


def base64_size(blob: str) -> int:
    """The decoded size of strict base64 ``blob``; raises ``ValueError`` when it is not (RFC 4648, padded, no
    whitespace). Decodes slice by slice and keeps nothing, so a 16 MiB blob is never held a second time."""
    if len(blob) % 4:
        raise ValueError("base64 length is not a multiple of 4")
    padding = 2 if blob.endswith("==") else 1 if blob.endswith("=") else 0
    if blob.find("=", 0, len(blob) - padding) >= 0:
        raise ValueError("misplaced base64 padding")
    for start in range(0, len(blob), _SLICE):
        binascii.a2b_base64(blob[start : start + _SLICE], strict_mode=True)
    return len(blob) // 4 * 3 - padding


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
