"""The workspace MCP server that ships with host_bridge: it shows what a server sees of the folders you share.

Run it as ``python examples/workspace_server.py`` (stdio). It asks the client for its roots and, for every
``file://`` root, lists

* the README (``README``, ``README.md``, ``README.rst`` or ``README.txt``, the first found),
* the manifest files at the root (``pyproject.toml``, ``package.json``, ``Cargo.toml``, ``go.mod`` …),
* the last 20 commits when the root is a git repository, as ``git://<root name>/commit/<sha>``, read as
  ``git show --stat`` style text;

plus the template ``file:///{+path}`` for any file or directory inside a root (a directory reads as a listing),
with completion of ``path``. Nothing outside the roots is ever read: paths are compared by realpath and whole
path components, and anything else is "not found". Handshake-era clients can subscribe to any ``file://`` URI;
the server polls it and sends ``notifications/resources/updated`` when it changes, and
``notifications/resources/list_changed`` whenever the roots change.

Protocol eras. By default the server is handshake-only (it answers ``server/discover`` with -32601, so
``mode="auto"`` clients such as the host_bridge hub fall back to ``initialize``): it asks for the roots after
``notifications/initialized`` and again on every ``notifications/roots/list_changed``. With ``--both-eras`` a
2026-07-28 client is served too; that revision lets a server ask for roots only inside ``resources/read`` (through
``InputRequiredResult``), so every read asks again and ``resources/list`` shows the roots of the latest read.

Logs go to stderr (``workspace-server: N roots``); stdout carries nothing but the protocol.
"""

from __future__ import annotations

import argparse
import base64
import logging
import mimetypes
import os
import re
import stat
import sys
from collections import Counter
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import anyio
import git
import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.runner import serve_loop
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourcesListChanged, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

logger = logging.getLogger("workspace-server")

README_NAMES = ("README", "README.md", "README.rst", "README.txt")
MANIFEST_NAMES = (
    "pyproject.toml",
    "package.json",
    "Cargo.toml",
    "go.mod",
    "go.work",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "Gemfile",
    "composer.json",
    "mix.exs",
    "pubspec.yaml",
    "Package.swift",
    "deno.json",
)
MANIFEST_SUFFIXES = (".csproj",)
"""Manifests recognized by their extension rather than their whole name."""
MIME_BY_NAME = {
    "README": "text/plain",
    "go.mod": "text/plain",
    "go.work": "text/plain",
    "Gemfile": "text/x-ruby",
    "build.gradle": "text/x-groovy",
    "Package.swift": "text/x-swift",
    "mix.exs": "text/x-elixir",
}
MIME_BY_SUFFIX = {
    ".md": "text/markdown",
    ".rst": "text/x-rst",
    ".txt": "text/plain",
    ".toml": "application/toml",
    ".json": "application/json",
    ".xml": "application/xml",
    ".csproj": "application/xml",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".kts": "text/x-kotlin",
    ".py": "text/x-python",
}
TEMPLATE = "file:///{+path}"
MAX_READ_BYTES = 2 * 1024 * 1024
MAX_COMMITS = 20
MAX_COMPLETIONS = 100
MAX_LISTING = 10_000
"""Most entries in a directory listing."""
SKIPPED_DIRS = frozenset({".git", "node_modules"})
"""Directory names never offered by completion."""
ROOTS_KEY = "roots"
"""The ``inputRequests`` key under which the 2026 era asks for the roots."""
COMMIT_RE = re.compile(r"git://(?P<root>[^/?#]+)/commit/(?P<sha>[0-9a-f]{40}|[0-9a-f]{64})")
NOT_FOUND = -32002


@dataclass(frozen=True)
class Options:
    """Command-line options."""

    both_eras: bool
    poll_interval: float
    roots_timeout: float


def parse_options(argv: Sequence[str] | None = None) -> Options:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description="MCP server exposing READMEs, manifests and commits of the roots.")
    parser.add_argument(
        "--both-eras", action="store_true", help="also serve 2026-07-28 clients (default: handshake era only)"
    )
    parser.add_argument("--poll-interval", type=float, default=0.5, help="seconds between checks of subscribed files")
    parser.add_argument("--roots-timeout", type=float, default=10.0, help="seconds to wait for a roots/list answer")
    args = parser.parse_args(argv)
    return Options(args.both_eras, max(args.poll_interval, 0.05), args.roots_timeout)


def not_found(uri: str) -> MCPError:
    """The error for a URI that does not exist or lies outside every root."""
    return MCPError(code=NOT_FOUND, message="Resource not found", data={"uri": uri})


def mime_type(path: str) -> str | None:
    """The MIME type for a file name, from the tables above, then the system's guess."""
    name = os.path.basename(path)
    if name in MIME_BY_NAME:
        return MIME_BY_NAME[name]
    suffix = os.path.splitext(name)[1].lower()
    return MIME_BY_SUFFIX.get(suffix) or mimetypes.guess_type(name)[0]


def is_inside(path: str, root: str) -> bool:
    """Whether the real path ``path`` is ``root`` or below it, comparing whole path components."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def uri_to_path(uri: str) -> str | None:
    """The real path a local ``file://`` URI names, or None for any other URI."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        return None
    path = unquote(parts.path)
    if "\0" in path:
        return None
    return os.path.realpath("/" + path.lstrip("/"))


@dataclass(frozen=True)
class SharedRoot:
    """One ``file://`` root the client shared."""

    name: str
    """Unique among the current roots; names the root in ``git://`` URIs."""
    path: str
    """Its real path."""

    @property
    def key(self) -> str:
        """The authority of this root's ``git://`` URIs."""
        return quote(self.name, safe="")


def shared_roots(result: types.ListRootsResult) -> tuple[SharedRoot, ...]:
    """The usable roots of a ``roots/list`` answer: local ``file://`` directories, with unique names."""
    roots: list[SharedRoot] = []
    taken: set[str] = set()
    for root in result.roots:
        path = uri_to_path(str(root.uri))
        if path is None or not os.path.isdir(path):
            logger.info("ignoring root %s: not a local directory", root.uri)
            continue
        base = root.name or os.path.basename(path) or "root"
        name, counter = base, 1
        while name in taken:
            counter += 1
            name = f"{base}-{counter}"
        taken.add(name)
        roots.append(SharedRoot(name=name, path=path))
    return tuple(roots)


def as_roots(answer: types.InputResponse) -> types.ListRootsResult:
    """A 2026 input response as a roots answer (pydantic may have parsed it as another union member)."""
    if isinstance(answer, types.ListRootsResult):
        return answer
    return types.ListRootsResult.model_validate(answer.model_dump(by_alias=True, mode="json"))


# Git history.


def open_repo(root: SharedRoot) -> git.Repo | None:
    """The git repository whose top is ``root``, or None."""
    try:
        return git.Repo(root.path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


def commit_resources(root: SharedRoot) -> list[types.Resource]:
    """The last commits of the root's repository (none when it is not one or has no commits)."""
    repo = open_repo(root)
    if repo is None:
        return []
    with repo:
        if not repo.head.is_valid():
            return []
        return [
            types.Resource(
                uri=f"git://{root.key}/commit/{commit.hexsha}",
                name=f"{root.name}@{commit.hexsha[:7]}",
                title=first_line(commit.message),
                description=f"Commit by {commit.author.name}, {commit.authored_datetime:%Y-%m-%d %H:%M}",
                mime_type="text/plain",
            )
            for commit in repo.iter_commits(max_count=MAX_COMMITS)
        ]


def first_line(message: str | bytes) -> str:
    """The summary line of a commit message."""
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
    return text.strip().splitlines()[0] if text.strip() else ""


def git_date(when: datetime) -> str:
    """A date in git's default format, e.g. ``Sun Nov 2 09:05:01 2025 +0100``."""
    return f"{when:%a %b} {when.day} {when:%H:%M:%S %Y %z}"


def show_commit(root: SharedRoot, sha: str) -> str | None:
    """``git show --stat`` style text of one commit of the root's repository, or None if there is none."""
    repo = open_repo(root)
    if repo is None:
        return None
    with repo:
        try:
            commit = repo.commit(sha)
            files = commit.stats.files
        except (ValueError, git.BadName, git.BadObject, git.GitCommandError):
            return None
        message = commit.message.decode("utf-8", "replace") if isinstance(commit.message, bytes) else commit.message
        lines = [
            f"commit {commit.hexsha}",
            f"Author: {commit.author.name} <{commit.author.email}>",
            f"Date:   {git_date(commit.authored_datetime)}",
            "",
            *(f"    {line}".rstrip() for line in message.rstrip().splitlines()),
            "",
            *stat_lines(files),
        ]
        return "\n".join(lines) + "\n"


def stat_lines(files: dict[Any, Any]) -> list[str]:
    """The per-file lines and the summary of ``git show --stat``."""
    if not files:
        return []
    width = max(len(str(path)) for path in files)
    most = max(int(change["lines"]) for change in files.values()) or 1
    scale = min(1.0, 50 / most)
    digits = len(str(most))
    lines: list[str] = []
    insertions = deletions = 0
    for path, change in files.items():
        added, removed = int(change["insertions"]), int(change["deletions"])
        insertions, deletions = insertions + added, deletions + removed
        bar = "+" * round(added * scale) + "-" * round(removed * scale)
        lines.append(f" {path!s:<{width}} | {added + removed:>{digits}} {bar}".rstrip())
    summary = f" {len(files)} file{'s' if len(files) != 1 else ''} changed"
    if insertions:
        summary += f", {insertions} insertion{'s' if insertions != 1 else ''}(+)"
    if deletions:
        summary += f", {deletions} deletion{'s' if deletions != 1 else ''}(-)"
    return [*lines, summary]


# Files inside the roots.


def file_resource(path: str, description: str) -> types.Resource:
    """The listed resource of a file at a root."""
    size = os.stat(path).st_size
    return types.Resource(
        uri=Path(path).as_uri(),
        name=os.path.basename(path),
        description=description,
        mime_type=mime_type(path) or "text/plain",
        size=size,
    )


def root_resources(root: SharedRoot) -> list[types.Resource]:
    """The README, the manifests and the recent commits of one root."""
    resources: list[types.Resource] = []
    for name in README_NAMES:
        path = os.path.join(root.path, name)
        if os.path.isfile(path) and is_inside(os.path.realpath(path), root.path):
            resources.append(file_resource(path, f"README of {root.name}"))
            break
    try:
        entries = sorted(os.listdir(root.path))
    except OSError:
        entries = []
    for name in entries:
        if name not in MANIFEST_NAMES and not name.endswith(MANIFEST_SUFFIXES):
            continue
        path = os.path.join(root.path, name)
        if os.path.isfile(path) and is_inside(os.path.realpath(path), root.path):
            resources.append(file_resource(path, f"Project manifest of {root.name}"))
    try:
        resources.extend(commit_resources(root))
    except Exception:
        logger.exception("could not read the git history of %s", root.path)
    return resources


def read_path(uri: str, path: str) -> types.TextResourceContents | types.BlobResourceContents:
    """The contents of a file or a directory listing; ``path`` is already known to be inside a root."""
    try:
        info = os.stat(path)
    except OSError:
        raise not_found(uri) from None
    if stat.S_ISDIR(info.st_mode):
        return types.TextResourceContents(uri=uri, mime_type="text/plain", text=directory_listing(uri, path))
    if not stat.S_ISREG(info.st_mode):
        raise not_found(uri)
    if info.st_size > MAX_READ_BYTES:
        raise MCPError(
            code=types.INVALID_REQUEST,
            message=f"The file is {info.st_size} bytes, over the limit of {MAX_READ_BYTES}",
            data={"uri": uri, "size": info.st_size, "limit": MAX_READ_BYTES},
        )
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_READ_BYTES + 1)
    except OSError:
        raise not_found(uri) from None
    guessed = mime_type(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        blob = base64.b64encode(data).decode("ascii")
        return types.BlobResourceContents(uri=uri, mime_type=guessed or "application/octet-stream", blob=blob)
    return types.TextResourceContents(uri=uri, mime_type=guessed or "text/plain", text=text)


def directory_listing(uri: str, path: str) -> str:
    """One entry a line, directories with a trailing ``/``."""
    try:
        with os.scandir(path) as scan:
            entries = sorted((entry.name + ("/" if entry.is_dir() else "")) for entry in scan)
    except OSError:
        raise not_found(uri) from None
    lines = entries[:MAX_LISTING]
    if len(entries) > MAX_LISTING:
        lines.append(f"… and {len(entries) - MAX_LISTING} more")
    return "\n".join(lines) + ("\n" if lines else "")


def complete_path(roots: Sequence[SharedRoot], typed: str) -> list[str]:
    """Values for the ``path`` of ``file:///{+path}`` that start with ``typed``: roots, then their entries."""
    absolute = "/" + typed.lstrip("/")
    values: list[str] = []
    folder, _, prefix = absolute.rpartition("/")
    real_folder = os.path.realpath(folder or "/")
    if any(is_inside(real_folder, root.path) for root in roots):
        try:
            with os.scandir(real_folder) as scan:
                for entry in scan:
                    if not entry.name.startswith(prefix) or entry.name in SKIPPED_DIRS:
                        continue
                    target = os.path.realpath(entry.path)
                    if any(is_inside(target, root.path) for root in roots):
                        suffix = "/" if entry.is_dir() else ""
                        values.append(f"{folder}/{entry.name}{suffix}")
        except OSError:
            pass
    for root in roots:
        offered = root.path.rstrip("/") + "/"
        if offered.startswith(absolute) and offered != absolute and offered not in values:
            values.append(offered)
    return sorted(value.lstrip("/") for value in values)


class WorkspaceServer:
    """The roots the client shared, the resources derived from them, and the subscriptions to them."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.roots: tuple[SharedRoot, ...] = ()
        """The current ``file://`` roots (2026 era: those of the latest read)."""
        self.bus = InMemorySubscriptionBus()
        """Delivers events to 2026-07-28 ``subscriptions/listen`` streams."""
        self.listen_handler = ListenHandler(self.bus)
        self.subscribed: set[str] = set()
        """URIs subscribed with handshake-era ``resources/subscribe``."""
        self.listened: Counter[str] = Counter()
        """URIs requested by open 2026-era listen streams."""
        self.stamps: dict[str, tuple[int, int] | None] = {}
        """Watched URI → (mtime in ns, size) when last checked; None when it was missing or outside the roots."""
        self.session: ServerSession | None = None
        """The handshake-era session, once initialized; it carries the notifications."""
        self._roots_lock = anyio.Lock()

    @asynccontextmanager
    async def lifespan(self, server: Server[Any]) -> AsyncGenerator[dict[str, Any]]:
        """Watch subscribed files while the server runs."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self.watch)
            yield {}
            tasks.cancel_scope.cancel()

    # Roots.

    def adopt_roots(self, result: types.ListRootsResult) -> bool:
        """Take a roots answer; returns whether the roots changed."""
        roots = shared_roots(result)
        changed = roots != self.roots
        self.roots = roots
        logger.info("%d roots", len(roots))
        return changed

    async def fetch_roots(self, session: ServerSession) -> None:
        """Handshake era: ask the client for its roots; announce a changed list."""
        capabilities = session.client_capabilities
        if capabilities is None or capabilities.roots is None:
            logger.info("the client does not share roots")
            return
        async with self._roots_lock:
            try:
                result = await session.send_request(
                    types.ListRootsRequest(),
                    types.ListRootsResult,
                    request_read_timeout_seconds=self.options.roots_timeout,
                )
            except (MCPError, ValidationError) as error:
                logger.warning("roots/list failed: %s", error)
                return
            changed = self.adopt_roots(result)
        if changed:
            await self.announce_list_changed(session)

    async def announce_list_changed(self, session: ServerSession | None) -> None:
        """``resources/list_changed`` to the handshake-era client and to 2026 listen streams."""
        if session is not None and session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            try:
                await session.send_resource_list_changed()
            except Exception as error:
                logger.warning("could not send resources/list_changed: %s", error)
        await self.bus.publish(ResourcesListChanged())

    async def on_initialized(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        """Handshake done: ask for the roots."""
        self.session = ctx.session
        await self.fetch_roots(ctx.session)

    async def on_roots_changed(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        """The client's roots changed: ask again."""
        self.session = ctx.session
        await self.fetch_roots(ctx.session)

    def locate(self, uri: str) -> str | None:
        """The real path of a ``file://`` URI inside one of the roots, or None."""
        path = uri_to_path(uri)
        if path is None or not any(is_inside(path, root.path) for root in self.roots):
            return None
        return path

    # Requests.

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """README, manifests and recent commits of every root."""
        roots = self.roots

        def collect() -> list[types.Resource]:
            return [resource for root in roots for resource in root_resources(root)]

        return types.ListResourcesResult(resources=await anyio.to_thread.run_sync(collect))

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """The one template: any file inside a shared folder."""
        template = types.ResourceTemplate(
            uri_template=TEMPLATE,
            name="file",
            title="A file inside a shared folder",
            description="A file (or a directory, read as a listing) inside one of the shared folders",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        """A file, a directory listing or a commit; 2026-era reads first ask for the current roots."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            answer = (params.input_responses or {}).get(ROOTS_KEY)
            if answer is None:
                return types.InputRequiredResult(
                    input_requests={ROOTS_KEY: types.ListRootsRequest()}, request_state="workspace-roots"
                )
            if self.adopt_roots(as_roots(answer)):
                await self.announce_list_changed(None)
        uri = params.uri
        if match := COMMIT_RE.fullmatch(uri):
            root = next((root for root in self.roots if root.key == match["root"]), None)
            text = None if root is None else await anyio.to_thread.run_sync(show_commit, root, match["sha"])
            if text is None:
                raise not_found(uri)
            return types.ReadResourceResult(
                contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
            )
        path = self.locate(uri)
        if path is None:
            raise not_found(uri)
        return types.ReadResourceResult(contents=[await anyio.to_thread.run_sync(read_path, uri, path)])

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        """Complete ``path`` of the file template from the roots' directory entries."""
        ref, argument = params.ref, params.argument
        if not isinstance(ref, types.ResourceTemplateReference) or ref.uri != TEMPLATE or argument.name != "path":
            return types.CompleteResult(completion=types.Completion(values=[]))
        values = await anyio.to_thread.run_sync(complete_path, self.roots, argument.value)
        return types.CompleteResult(
            completion=types.Completion(
                values=values[:MAX_COMPLETIONS], total=len(values), has_more=len(values) > MAX_COMPLETIONS
            )
        )

    # Subscriptions.

    def stamp(self, uri: str) -> tuple[int, int] | None:
        """What a change of ``uri`` is detected by: modification time and size (None when unreadable)."""
        path = self.locate(uri)
        if path is None:
            return None
        try:
            info = os.stat(path)
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """Handshake-era subscription: start watching the URI."""
        self.session = ctx.session
        self.stamps.setdefault(params.uri, self.stamp(params.uri))
        self.subscribed.add(params.uri)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        """Stop watching a handshake-era subscription."""
        self.subscribed.discard(params.uri)
        return types.EmptyResult()

    async def listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """2026-era listen stream: the SDK's handler, watching the requested URIs while it is open."""
        uris = list(params.notifications.resource_subscriptions or ())
        for uri in uris:
            self.stamps.setdefault(uri, self.stamp(uri))
        self.listened.update(uris)
        try:
            return await self.listen_handler(ctx, params)
        finally:
            self.listened.subtract(uris)

    def watched(self) -> set[str]:
        """Every URI someone is subscribed to."""
        return self.subscribed | {uri for uri, count in self.listened.items() if count > 0}

    async def watch(self) -> None:
        """Poll the watched URIs and send ``resources/updated`` for those whose file changed."""
        while True:
            await anyio.sleep(self.options.poll_interval)
            watched = self.watched()
            for uri in set(self.stamps) - watched:
                del self.stamps[uri]
            for uri in sorted(watched):
                current = self.stamp(uri)
                if current == self.stamps.get(uri):
                    continue
                self.stamps[uri] = current
                await self.send_updated(uri)

    async def send_updated(self, uri: str) -> None:
        """``resources/updated`` to the handshake-era subscriber and to 2026 listen streams."""
        if uri in self.subscribed and self.session is not None:
            try:
                await self.session.send_resource_updated(uri)
            except Exception as error:
                logger.warning("could not send resources/updated for %s: %s", uri, error)
        if self.listened[uri] > 0:
            await self.bus.publish(ResourceUpdated(uri=uri))


def build_server(workspace: WorkspaceServer) -> Server[Any]:
    """The low-level server wired to ``workspace``."""
    server: Server[Any] = Server(
        "workspace-server",
        version="1.0",
        instructions="Resources of the folders the user shared: READMEs, project manifests and recent commits.",
        lifespan=workspace.lifespan,
        on_list_resources=workspace.list_resources,
        on_list_resource_templates=workspace.list_templates,
        on_read_resource=workspace.read_resource,
        on_completion=workspace.complete,
        on_subscribe_resource=workspace.subscribe,
        on_unsubscribe_resource=workspace.unsubscribe,
        on_subscriptions_listen=workspace.listen,
    )
    server.add_notification_handler("notifications/initialized", types.NotificationParams, workspace.on_initialized)
    server.add_notification_handler(
        "notifications/roots/list_changed", types.NotificationParams, workspace.on_roots_changed
    )
    return server


async def serve(options: Options) -> None:
    """Serve on stdin/stdout until the client closes stdin."""
    server = build_server(WorkspaceServer(options))
    init_options = server.create_initialization_options(NotificationOptions(resources_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        if options.both_eras:
            await server.run(read_stream, write_stream, init_options)
            return
        # serve_loop is handshake-only: server/discover gets -32601, so auto clients run initialize.
        async with server.lifespan(server) as state:
            await serve_loop(server, read_stream, write_stream, lifespan_state=state, init_options=init_options)


def configure_logging() -> None:
    """Log to stderr as ``workspace-server: message``; the SDK logs only warnings."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    logger.setLevel(logging.INFO)


def main() -> None:
    """Entry point."""
    configure_logging()
    anyio.run(serve, parse_options())


if __name__ == "__main__":
    main()
