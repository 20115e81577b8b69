"""Fixture MCP server with many resources, templates, completion and subscriptions, plus injectable faults.

Serves both protocol eras (``--pin VERSION`` makes it handshake-only at that version). Resources are
``test://res/{i}`` (paginated), blobs ``test://blob/{n}``, templates ``test://items/{category}/{id}`` and
``test://search{?q}``. Control URIs make events deterministic: reading ``test://control/touch/{i}`` sends one
``resources/updated`` for ``test://res/{i}`` (if subscribed) and one ``resources/list_changed``; reading
``test://control/grow`` adds a resource and sends ``list_changed``, ``test://control/grow-quietly`` adds one and says
nothing; ``test://control/env/NAME`` reads the server's
environment variable NAME (``(unset)`` when it has none). Handshake-era subscribers get notifications
directly; 2026-07-28 ``subscriptions/listen`` streams get the same events through the SDK's subscription bus.

``--fault MODE`` injects one fault; see ``FAULTS`` and ``tests/servers/README.md``. ``--record PATH`` receives
JSON lines: ``{"cancelled": id, "reason": …}`` for every ``notifications/cancelled``, ``{"list": cursor}`` for every
``resources/list`` page asked for (``null`` for the first), ``{"reading": id, "uri": …}``
(hang-read), ``{"flood": {…}}`` (flood, once sent), ``{"grandchild": pid, "server": pid}`` (spawn-grandchild,
stubborn).
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from fixture_support import RecordFile, configure_logging, serve_stdio
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourcesListChanged, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

logger = configure_logging("resources_server")

FAULTS = (
    "crash-on-read",
    "crash-at-start",
    "crash-after-initialize",
    "hang-initialize",
    "hang-read",
    "flood",
    "updated-unknown",
    "big-blob",
    "big-text",
    "endless-cursor",
    "wrong-uri-contents",
    "bad-base64",
    "empty-contents",
    "evil-list",
    "no-resources",
    "spawn-grandchild",
    "stubborn",
    "many-items",
    "bad-version",
)
LEGACY_ONLY_FAULTS = frozenset({"crash-after-initialize", "bad-version"})
"""Faults of the handshake: the server refuses ``server/discover`` so ``mode="auto"`` clients run ``initialize``."""

CATEGORIES: dict[str, tuple[str, ...]] = {
    "books": ("b-100", "b-101", "b-200"),
    "bikes": ("k-1", "k-2"),
    "boats": ("s-10",),
    "cars": ("c-7", "c-70", "c-700"),
}
QUERIES = ("alpha", "alpine", "beta", "gamma", "gammon")
ITEM_TEMPLATE = "test://items/{category}/{id}"
SEARCH_TEMPLATE = "test://search{?q}"
ENDLESS_CURSOR = "endless"
BIG_BLOB_URI = "test://blob/big"
BIG_TEXT_URI = "test://text/big"
FAKE_PASSWD = "root:x:0:0:fake entry served by resources_server:/root:/bin/sh\n"

RES_RE = re.compile(r"test://res/(\d+)")
BLOB_RE = re.compile(r"test://blob/(\d+)")
TOUCH_RE = re.compile(r"test://control/touch/(\d+)")
ENV_RE = re.compile(r"test://control/env/([A-Za-z_][A-Za-z0-9_]*)")
ITEM_RE = re.compile(r"test://items/(?P<category>[^/?#]+)/(?P<id>[^/?#]+)")
SEARCH_RE = re.compile(r"test://search(?:\?q=(?P<q>[^#]*))?")

EVIL_RESOURCES: tuple[tuple[str, str, str, str], ...] = (
    ("file:///etc/passwd", "passwd", "text/plain", FAKE_PASSWD),
    ("javascript:alert(1)", "click-me", "text/plain", "javascript resource text"),
    ("test://evil/bidi", "invoice\u202egpj.exe", "text/plain", "bidi override in the name"),
    ("test://evil/ansi", "\x1b[31mred\x1b[0m name", "text/plain", "ANSI escape in the name"),
    ("test://evil/html", "page.html", "text/html", "<script>alert(1)</script>"),
    ("test://evil/svg", "image.svg", "image/svg+xml", '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'),
)
"""(uri, name, mimeType, text) of the evil-list resources."""


@dataclass(frozen=True)
class Options:
    """Command-line options."""

    count: int
    page_size: int
    not_found_code: int
    update_every: float | None
    list_changed: bool
    fault: str | None
    answer_version: str
    big_mb: float
    flood_updates: int
    flood_list_changed: int
    record: Path | None
    pin: str | None
    many: int = 200_000


def parse_options(argv: list[str] | None = None) -> Options:
    """Parse the command line."""
    parser = argparse.ArgumentParser(
        description="Fixture MCP server with many resources, templates, completion, subscriptions and faults."
    )
    parser.add_argument("--count", type=int, default=25, help="number of test://res/{i} resources")
    parser.add_argument("--page-size", type=int, default=10, help="resources per resources/list page")
    parser.add_argument("--not-found-code", type=int, default=-32002, help="error code for unknown URIs")
    parser.add_argument("--update-every", type=float, metavar="SECONDS", help="send updated for subscribed URIs")
    parser.add_argument("--list-changed", action="store_true", help="advertise resources.listChanged")
    parser.add_argument("--fault", choices=FAULTS, help="inject one fault")
    parser.add_argument("--answer-version", default="2099-01-01", help="protocolVersion answered by bad-version")
    parser.add_argument("--big-mb", type=float, default=100.0, help="size of the big-blob/big-text resource")
    parser.add_argument("--flood-updates", type=int, default=10_000, help="updated notifications sent by flood")
    parser.add_argument("--flood-list-changed", type=int, default=1_000, help="list_changed sent by flood")
    parser.add_argument("--record", type=Path, help="append fault observations here as JSON lines")
    parser.add_argument("--pin", choices=HANDSHAKE_PROTOCOL_VERSIONS, help="handshake only, negotiating this version")
    parser.add_argument("--many", type=int, default=200_000, help="items per answer of many-items")
    args = parser.parse_args(argv)
    return Options(
        count=args.count,
        page_size=args.page_size,
        not_found_code=args.not_found_code,
        update_every=args.update_every,
        list_changed=args.list_changed,
        fault=args.fault,
        answer_version=args.answer_version,
        big_mb=args.big_mb,
        flood_updates=args.flood_updates,
        flood_list_changed=args.flood_list_changed,
        record=args.record,
        pin=args.pin,
        many=args.many,
    )


def many_items(method: str | None, params: Mapping[str, Any], count: int) -> dict[str, Any] | None:
    """many-items: a ``resources/list``, ``resources/templates/list`` or ``resources/read`` answer of ``count`` tiny
    items in one piece, as plain JSON (SDK models for each would cost the fixture far more than the client)."""

    def result(model: types.Result, **items: list[dict[str, str]]) -> dict[str, Any]:
        return model.model_dump(by_alias=True, mode="json", exclude_none=True) | items

    if method == "resources/list":
        resources = [{"uri": f"test://many/{i}", "name": f"m{i}"} for i in range(count)]
        return result(types.ListResourcesResult(resources=[]), resources=resources)
    if method == "resources/templates/list":
        templates = [{"uriTemplate": f"test://many/{i}/{{x}}", "name": f"t{i}"} for i in range(count)]
        return result(types.ListResourceTemplatesResult(resource_templates=[]), resourceTemplates=templates)
    if method == "resources/read" and str(params.get("uri", "")).startswith("test://many/"):
        contents = [{"uri": str(params["uri"]), "text": "x"} for _ in range(count)]
        return result(types.ReadResourceResult(contents=[]), contents=contents)
    return None


def res_text(index: int) -> str:
    """The text of ``test://res/{index}``."""
    return f"content of res {index}"


def make_resource(index: int) -> types.Resource:
    """``test://res/{index}``; every 3rd has a title, every 4th a description, every 5th annotations."""
    return types.Resource(
        uri=f"test://res/{index}",
        name=f"res-{index:05d}",
        mime_type="text/plain",
        size=len(res_text(index).encode()),
        title=f"Resource {index}" if index % 3 == 0 else None,
        description=f"Description of resource {index}" if index % 4 == 0 else None,
        annotations=types.Annotations(priority=(index % 11) / 10, audience=["user"]) if index % 5 == 0 else None,
    )


def zero_base64(size: int) -> str:
    """Base64 of ``size`` zero bytes, built without materializing the bytes."""
    full, rest = divmod(size, 3)
    return "AAAA" * full + ("", "AA==", "AAA=")[rest]


def text_contents(uri: str, text: str, mime_type: str = "text/plain") -> types.TextResourceContents:
    """Text contents of ``uri``."""
    return types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)


def blob_contents(uri: str, blob: str) -> types.BlobResourceContents:
    """Binary contents of ``uri`` (``blob`` is already base64)."""
    return types.BlobResourceContents(uri=uri, mime_type="application/octet-stream", blob=blob)


def filter_prefix(values: tuple[str, ...] | list[str], prefix: str) -> types.CompleteResult:
    """Completion values starting with ``prefix``."""
    matches = [value for value in values if value.startswith(prefix)]
    return types.CompleteResult(
        completion=types.Completion(values=matches[:100], total=len(matches), has_more=len(matches) > 100)
    )


class ResourcesFixture:
    """State and request handlers of the resources fixture."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.fault = options.fault
        self.count = options.count
        """How many ``test://res/{i}`` exist; ``test://control/grow`` raises it."""
        self.record = RecordFile(options.record)
        self.bus = InMemorySubscriptionBus()
        """Delivers events to 2026-07-28 ``subscriptions/listen`` streams."""
        buffered = options.flood_updates + options.flood_list_changed + 64 if self.fault == "flood" else 1024
        self.listen_handler = ListenHandler(self.bus, max_buffered_events=buffered)
        self.subscribed: set[str] = set()
        """URIs subscribed with handshake-era ``resources/subscribe``."""
        self.listened: Counter[str] = Counter()
        """URIs requested by open 2026-era listen streams."""
        self.session: ServerSession | None = None
        """The handshake-era session of the latest subscriber; its standalone channel carries periodic updates."""
        self.tg: anyio.abc.TaskGroup | None = None

    @asynccontextmanager
    async def lifespan(self, server: Server[Any]) -> AsyncGenerator[dict[str, Any]]:
        """Own a task group for background pushes while the server runs."""
        async with anyio.create_task_group() as tg:
            self.tg = tg
            if self.options.update_every:
                tg.start_soon(self.update_periodically, self.options.update_every)
            yield {}
            tg.cancel_scope.cancel()

    def spawn(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        """Run ``func(*args)`` in the background."""
        assert self.tg is not None, "lifespan not entered"
        self.tg.start_soon(func, *args)

    def listed_count(self) -> int:
        """How many resources are listed in all."""
        extra = len(EVIL_RESOURCES) if self.fault == "evil-list" else 0
        return extra + self.count + (1 if self.fault in ("big-blob", "big-text") else 0)

    def resources(self, start: int, end: int) -> list[types.Resource]:
        """The listed resources from index ``start`` to ``end`` (exclusive), in list order.

        Only these are built, so a page of a long list costs the page, not the list.
        """
        evil: list[types.Resource] = []
        if self.fault == "evil-list":
            evil = [types.Resource(uri=uri, name=name, mime_type=mime) for uri, name, mime, _ in EVIL_RESOURCES]
        size = int(self.options.big_mb * 1024 * 1024)
        big: list[types.Resource] = []
        if self.fault == "big-blob":
            big = [types.Resource(uri=BIG_BLOB_URI, name="big-blob", mime_type="application/octet-stream", size=size)]
        if self.fault == "big-text":
            big = [types.Resource(uri=BIG_TEXT_URI, name="big-text", mime_type="text/plain", size=size)]
        end = min(end, self.listed_count())
        listed: list[types.Resource] = []
        for index in range(max(start, 0), end):
            if index < len(evil):
                listed.append(evil[index])
            elif index - len(evil) < self.count:
                listed.append(make_resource(index - len(evil)))
            else:
                listed.append(big[index - len(evil) - self.count])
        return listed

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """One page of resources; the cursor is the offset of the page."""
        cursor = params.cursor if params else None
        self.record.write({"list": cursor})
        size = self.options.page_size
        if self.fault == "endless-cursor":
            start = 0 if cursor is None else size
            return types.ListResourcesResult(resources=self.resources(start, start + size), next_cursor=ENDLESS_CURSOR)
        if cursor is None:
            start = 0
        elif cursor.isdigit():
            start = int(cursor)
        else:
            raise MCPError(code=-32602, message="Invalid cursor", data={"cursor": cursor})
        end = start + size
        next_cursor = str(end) if end < self.listed_count() else None
        return types.ListResourcesResult(resources=self.resources(start, end), next_cursor=next_cursor)

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """The item and search templates."""
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=ITEM_TEMPLATE, name="item", mime_type="text/plain", description="An item by category"
                ),
                types.ResourceTemplate(uri_template=SEARCH_TEMPLATE, name="search", mime_type="text/plain"),
            ]
        )

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """Complete template arguments from fixed lists; ``id`` values depend on the ``category`` context."""
        ref, argument = params.ref, params.argument
        if not isinstance(ref, types.ResourceTemplateReference):
            raise MCPError(code=-32602, message="Unknown reference", data={"ref": ref.name})
        context = (params.context.arguments if params.context else None) or {}
        if ref.uri == ITEM_TEMPLATE and argument.name == "category":
            return filter_prefix(tuple(CATEGORIES), argument.value)
        if ref.uri == ITEM_TEMPLATE and argument.name == "id":
            category = context.get("category")
            ids = CATEGORIES.get(category, ()) if category else tuple(i for v in CATEGORIES.values() for i in v)
            return filter_prefix(ids, argument.value)
        if ref.uri == SEARCH_TEMPLATE and argument.name == "q":
            return filter_prefix(QUERIES, argument.value)
        raise MCPError(code=-32602, message="Unknown reference", data={"ref": ref.uri, "argument": argument.name})

    def not_found(self, uri: str) -> MCPError:
        """The error for an unknown URI, with the configured code."""
        return MCPError(code=self.options.not_found_code, message="Resource not found", data={"uri": uri})

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """Read one URI, with the read faults applied."""
        uri = params.uri
        if self.fault == "crash-on-read":
            logger.error("crash-on-read: exiting on resources/read of %s", uri)
            os._exit(1)
        if self.fault == "hang-read" and not uri.startswith("test://control/"):
            await self.hang(ctx, uri)
        contents = await self.contents(ctx, uri)
        if self.fault == "empty-contents":
            contents = []
        if self.fault == "wrong-uri-contents":
            contents.append(text_contents("file:///etc/passwd", FAKE_PASSWD))
        return types.ReadResourceResult(contents=contents)

    async def contents(
        self, ctx: ServerRequestContext[Any], uri: str
    ) -> list[types.TextResourceContents | types.BlobResourceContents]:
        """The contents of ``uri`` without faults; unknown URIs raise the not-found error."""
        if (match := RES_RE.fullmatch(uri)) and int(match[1]) < self.count:
            return [text_contents(uri, res_text(int(match[1])))]
        if match := BLOB_RE.fullmatch(uri):
            return [blob_contents(uri, self.blob(int(match[1])))]
        if match := TOUCH_RE.fullmatch(uri):
            await self.touch(ctx.session, f"test://res/{match[1]}")
            return [text_contents(uri, f"touched test://res/{match[1]}")]
        if match := ENV_RE.fullmatch(uri):
            return [text_contents(uri, os.environ.get(match[1], "(unset)"))]
        if uri == "test://control/grow":
            self.count += 1
            await self.send_list_changed(ctx.session)
            return [text_contents(uri, f"count is now {self.count}")]
        if uri == "test://control/grow-quietly":
            self.count += 1
            return [text_contents(uri, f"count is now {self.count}")]
        if ITEM_RE.fullmatch(uri) or SEARCH_RE.fullmatch(uri):
            return [text_contents(uri, f"expanded {uri}")]
        return self.fault_contents(uri)

    def fault_contents(self, uri: str) -> list[types.TextResourceContents | types.BlobResourceContents]:
        """Contents of the URIs that exist only in some fault modes."""
        size = int(self.options.big_mb * 1024 * 1024)
        if uri == BIG_BLOB_URI and self.fault == "big-blob":
            return [blob_contents(uri, zero_base64(size))]
        if uri == BIG_TEXT_URI and self.fault == "big-text":
            return [text_contents(uri, "x" * size)]
        if self.fault == "evil-list":
            for evil_uri, _, mime, text in EVIL_RESOURCES:
                if uri == evil_uri:
                    return [text_contents(uri, text, mime)]
        raise self.not_found(uri)

    def blob(self, size: int) -> str:
        """Base64 of ``size`` bytes ``i % 256``, or invalid base64 in the bad-base64 mode."""
        if self.fault == "bad-base64":
            return "@@not base64@@"
        return base64.b64encode(bytes(i % 256 for i in range(size))).decode()

    async def hang(self, ctx: ServerRequestContext[Any], uri: str) -> None:
        """Never answer; the client's ``notifications/cancelled`` ends this with a cancellation."""
        self.record.write({"reading": ctx.request_id, "uri": uri})
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            logger.info("hang-read: read %s of %s cancelled", ctx.request_id, uri)
            raise

    async def send_updated(self, session: ServerSession | None, uri: str) -> None:
        """``resources/updated`` for ``uri`` to handshake-era subscribers and to listen streams."""
        if session is not None and uri in self.subscribed:
            await session.send_resource_updated(uri)
        await self.bus.publish(ResourceUpdated(uri=uri))

    async def send_list_changed(self, session: ServerSession) -> None:
        """``resources/list_changed`` in both eras (the SDK drops the direct one on 2026 connections)."""
        await session.send_resource_list_changed()
        await self.bus.publish(ResourcesListChanged())

    async def touch(self, session: ServerSession, uri: str) -> None:
        """One ``updated`` for ``uri`` (if subscribed) and one ``list_changed``."""
        await self.send_updated(session, uri)
        await self.send_list_changed(session)

    async def update_periodically(self, seconds: float) -> None:
        """Every ``seconds``, ``updated`` for each subscribed URI."""
        while True:
            await anyio.sleep(seconds)
            for uri in sorted(self.subscribed | set(+self.listened)):
                await self.send_updated(self.session, uri)

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """Handshake-era subscription; starts the flood or the unknown updates in those modes."""
        self.subscribed.add(params.uri)
        self.session = ctx.session
        if self.fault == "flood":
            session = ctx.session
            self.spawn(self.flood, params.uri, session.send_resource_updated, session.send_resource_list_changed)
        if self.fault == "updated-unknown":
            self.spawn(self.send_unknown_updates, ctx.session, params.uri)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        """Forget a handshake-era subscription."""
        self.subscribed.discard(params.uri)
        return types.EmptyResult()

    async def listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """2026-era listen stream: the SDK's handler, plus bookkeeping and the flood."""
        uris = list(params.notifications.resource_subscriptions or ())
        self.listened.update(uris)
        try:
            if self.fault == "flood":
                for uri in uris:
                    self.spawn(self.flood, uri, self.publish_updated, self.publish_list_changed)
            return await self.listen_handler(ctx, params)
        finally:
            self.listened.subtract(uris)

    async def publish_updated(self, uri: str) -> None:
        """``updated`` for listen streams only."""
        await self.bus.publish(ResourceUpdated(uri=uri))

    async def publish_list_changed(self) -> None:
        """``list_changed`` for listen streams only."""
        await self.bus.publish(ResourcesListChanged())

    async def flood(
        self, uri: str, updated: Callable[[str], Awaitable[None]], list_changed: Callable[[], Awaitable[None]]
    ) -> None:
        """Send the configured numbers of ``updated`` and interleaved ``list_changed`` as fast as possible."""
        total, changes = self.options.flood_updates, self.options.flood_list_changed
        every = max(1, total // changes) if changes else 0
        sent_changes = 0
        for index in range(total):
            await updated(uri)
            if every and (index + 1) % every == 0 and sent_changes < changes:
                await list_changed()
                sent_changes += 1
        for _ in range(changes - sent_changes):
            await list_changed()
        self.record.write({"flood": {"uri": uri, "updated": total, "list_changed": changes}})
        logger.info("flood: sent %d updated and %d list_changed for %s", total, changes, uri)

    async def send_unknown_updates(self, session: ServerSession, subscribed_uri: str) -> None:
        """``updated`` for URIs nobody subscribed, then one for ``subscribed_uri`` that marks the end."""
        for uri in ("test://res/never-subscribed", "test://unknown/1", "file:///etc/passwd"):
            await session.send_resource_updated(uri)
        await session.send_resource_updated(subscribed_uri)

    async def on_initialized(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        """crash-after-initialize: the handshake just completed, so exit."""
        logger.error("crash-after-initialize: exiting after notifications/initialized")
        os._exit(1)

    async def middleware(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        """Record cancellations; in bad-version mode answer ``initialize`` with the configured version."""
        if ctx.method == "notifications/cancelled":
            params = ctx.params or {}
            self.record.write({"cancelled": params.get("requestId"), "reason": params.get("reason")})
        if self.fault == "many-items" and (many := many_items(ctx.method, ctx.params or {}, self.options.many)):
            return many
        result = await call_next(ctx)
        if ctx.method == "initialize" and self.fault == "bad-version" and isinstance(result, dict):
            result = {**result, "protocolVersion": self.options.answer_version}
        return result


def build_server(fixture: ResourcesFixture) -> Server[Any]:
    """The low-level server wired to ``fixture``; with no-resources, a server that declares no capabilities."""
    if fixture.fault == "no-resources":
        return Server("resources-server", version="1.0")
    server: Server[Any] = Server(
        "resources-server",
        version="1.0",
        lifespan=fixture.lifespan,
        on_list_resources=fixture.list_resources,
        on_list_resource_templates=fixture.list_templates,
        on_read_resource=fixture.read_resource,
        on_completion=fixture.complete,
        on_subscribe_resource=fixture.subscribe,
        on_unsubscribe_resource=fixture.unsubscribe,
        on_subscriptions_listen=fixture.listen,
    )
    server.middleware.append(fixture.middleware)
    if fixture.fault == "crash-after-initialize":
        server.add_notification_handler("notifications/initialized", types.NotificationParams, fixture.on_initialized)
    return server


def drain_stdin() -> None:
    """hang-initialize: read stdin until the client closes it, answering nothing."""
    logger.info("hang-initialize: reading stdin, never answering")
    while os.read(sys.stdin.fileno(), 65536):
        pass


def spawn_grandchild(record: RecordFile) -> None:
    """spawn-grandchild: start ``sleep 3600`` in this process group and record its pid."""
    child = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    record.write({"grandchild": child.pid, "server": os.getpid()})
    logger.info("spawn-grandchild: sleep pid %d", child.pid)


async def serve(options: Options) -> None:
    """Serve until the client closes stdin."""
    fixture = ResourcesFixture(options)
    server = build_server(fixture)
    init_options = server.create_initialization_options(NotificationOptions(resources_changed=options.list_changed))
    await serve_stdio(server, init_options, pin=options.pin, legacy_only=options.fault in LEGACY_ONLY_FAULTS)


def main() -> None:
    """Apply the start-up faults, then serve."""
    options = parse_options()
    if options.fault == "crash-at-start":
        logger.error("crash-at-start: exiting with status 3")
        sys.exit(3)
    if options.fault == "hang-initialize":
        drain_stdin()
        return
    if options.fault == "stubborn":
        # Ignored dispositions survive exec, so the grandchild ignores SIGTERM too.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if options.fault in ("spawn-grandchild", "stubborn"):
        spawn_grandchild(RecordFile(options.record))
    if options.fault != "stubborn":
        anyio.run(serve, options)
        return
    try:
        anyio.run(serve, options)
    except Exception as error:
        logger.info("stubborn: serving ended with %r", error)
    logger.info("stubborn: stdin closed; staying alive until killed")
    threading.Event().wait()


if __name__ == "__main__":
    main()
