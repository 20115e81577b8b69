"""The roots registry: candidates × consent × accessibility → the effective roots of each server.

A server's effective roots are the candidates the user allowed for that server's identity that still
exist, are directories, are readable, and whose real path is still the one consented to (a retargeted
symlink withdraws the root). :meth:`RootsRegistry.roots_for` answers at once from the last computation,
re-checking consent at answer time so a revocation takes effect before any re-computation.

Changes are computed in :meth:`RootsRegistry.run`: invalidations (new candidates, servers, consent
changes, file-system events on the roots' parents, a periodic poll) are debounced into one re-computation,
and subscribers hear about each server whose list actually changed, once.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum
from typing import Protocol

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel

from host_bridge.consent.identity import ServerIdentity
from host_bridge.directory_watch import DirectoryWatcher
from host_bridge.uris import UriError, is_within, parse_file_uri
from host_bridge.wire import WireModel
from host_bridge.workspace.models import Candidate

logger = logging.getLogger(__name__)

_WATCH_SETTLE = 0.25
"""Seconds after the watched folders change before one more check, covering changes made while the new OS
watch was being set up."""


class Root(WireModel):
    """One entry of a ``roots/list`` answer."""

    uri: str
    """Canonical ``file://`` URI."""
    name: str | None = None
    """Display name shown to the server."""


class VisibleThrough(WireModel):
    """A candidate that is not shared itself but lies inside a shared folder, so the server sees it anyway."""

    uri: str
    """The candidate's canonical URI."""
    through: str
    """URI of the shared folder that contains it."""


def containing(uri: str, shared: Iterable[str]) -> str | None:
    """The nearest of the ``shared`` folder URIs that contains ``uri`` (other than ``uri`` itself), or ``None``."""
    try:
        path = parse_file_uri(uri)
    except UriError:
        return None
    best: tuple[int, str] | None = None
    for other in shared:
        if other == uri:
            continue
        try:
            root = parse_file_uri(other)
        except UriError:
            continue
        if is_within(path, root) and (best is None or len(root) > best[0]):
            best = (len(root), other)
    return None if best is None else best[1]


def visible_through(candidates: Iterable[Candidate], shared: Iterable[str]) -> tuple[VisibleThrough, ...]:
    """Every candidate of ``candidates`` not in ``shared`` (URIs) that lies inside one of them (the nearest)."""
    shared = tuple(shared)
    found: list[VisibleThrough] = []
    for candidate in candidates:
        if candidate.uri in shared:
            continue
        through = containing(candidate.uri, shared)
        if through is not None:
            found.append(VisibleThrough(uri=candidate.uri, through=through))
    return tuple(found)


class Access(StrEnum):
    """Result of checking a candidate folder on disk."""

    OK = "ok"
    MISSING = "missing"
    NOT_DIRECTORY = "notDirectory"
    UNREADABLE = "unreadable"
    MOVED = "moved"
    UNAVAILABLE = "unavailable"
    INVALID = "invalid"


_ACCESS_MESSAGES: dict[Access, str] = {
    Access.MISSING: "no longer exists; it is no longer shared (its consent is kept)",
    Access.NOT_DIRECTORY: "is no longer a folder; it is no longer shared",
    Access.UNREADABLE: "is not readable (check its permissions); it is not shared until it is",
    Access.MOVED: "now leads to a different real folder (a symlink changed); it is no longer shared, and the "
    "folder it leads to now is offered for you to decide",
    Access.UNAVAILABLE: "did not answer in time (a network mount?); it is not shared until it answers",
    Access.INVALID: "has a URI that cannot be shared",
}


class AccessNotice(WireModel):
    """A candidate whose accessibility changed for the worse, or recovered."""

    uri: str
    """The candidate's canonical URI."""
    access: Access
    """Its state now."""
    message: str
    """One sentence for the user."""


class ConsentLookup(Protocol):
    """The part of consent the registry needs."""

    def is_allowed(self, identity: ServerIdentity, path: str, /) -> bool:
        """Whether the user allows sharing the canonical ``path`` with the server ``identity``."""
        ...


RootsListener = Callable[[str, tuple[Root, ...]], None]
"""Called with a server id and its new effective roots."""
NoticeListener = Callable[[AccessNotice], None]
"""Called when a candidate's accessibility changes."""


def check_access(candidate: Candidate) -> Access:
    """Check on disk that ``candidate`` may be advertised now (blocking; run it in a worker thread)."""
    try:
        expected = parse_file_uri(candidate.uri)
        declared = parse_file_uri(candidate.declared_uri) if candidate.declared_uri else expected
    except UriError:
        return Access.INVALID
    try:
        real = os.path.realpath(declared, strict=True)
        info = os.stat(real)
    except FileNotFoundError:
        return Access.MISSING
    except PermissionError:
        return Access.UNREADABLE
    except OSError:
        return Access.MISSING
    if real != expected:
        return Access.MOVED
    if not stat.S_ISDIR(info.st_mode):
        return Access.NOT_DIRECTORY
    if not _readable(real, info):
        return Access.UNREADABLE
    return Access.OK


def _readable(path: str, info: os.stat_result) -> bool:
    if not os.access(path, os.R_OK | os.X_OK):
        return False
    # Root passes every access check; a folder whose bits grant nobody read and search was withdrawn on
    # purpose (chmod 000), so honour that for root too.
    return not (os.geteuid() == 0 and (info.st_mode & 0o444 == 0 or info.st_mode & 0o111 == 0))


class RootsRegistry:
    """Effective roots per server, kept current.

    Thread-safe entry points: :meth:`invalidate`. Everything else runs on the event loop.
    """

    def __init__(
        self,
        consent: ConsentLookup,
        *,
        debounce: float = 0.0,
        check_timeout: float = 2.0,
        poll_interval: float | None = 30.0,
        checker: Callable[[Candidate], Access] = check_access,
    ) -> None:
        """``checker`` is called in a worker thread per shared candidate and given ``check_timeout`` seconds."""
        self._consent = consent
        self._checker = checker
        self._debounce = debounce
        self._check_timeout = check_timeout
        self._poll_interval = poll_interval
        self._candidates: tuple[Candidate, ...] = ()
        """Current candidates, deduplicated by canonical URI."""
        self._servers: dict[str, ServerIdentity] = {}
        """Server id → its identity (where defined, id, launch fingerprint)."""
        self._access: dict[str, Access] = {}
        """Candidate URI → result of its last check (only candidates allowed for some server are checked)."""
        self._roots: dict[str, tuple[Root, ...]] = {}
        """Server id → effective roots as last computed (and announced)."""
        self._roots_listeners: list[RootsListener] = []
        self._notice_listeners: list[NoticeListener] = []
        self._dirty = anyio.Event()
        """Set when a re-computation is due."""
        self._limiter = anyio.CapacityLimiter(8)
        """Bounds worker threads a hung file system can hold."""
        self._loop_thread: int | None = None
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._watcher = DirectoryWatcher(self._on_fs_change)
        self._tasks: anyio.abc.TaskGroup | None = None
        """The task group of :meth:`run` while it runs."""
        self._refreshing = anyio.Lock()
        """One re-computation at a time (:meth:`run` and callers of :meth:`refresh`)."""

    def subscribe(self, listener: RootsListener) -> Callable[[], None]:
        """Hear about every server whose effective roots changed; returns an unsubscribe function."""
        self._roots_listeners.append(listener)
        return lambda: self._roots_listeners.remove(listener)

    def subscribe_notices(self, listener: NoticeListener) -> Callable[[], None]:
        """Hear about candidates becoming inaccessible (or accessible again)."""
        self._notice_listeners.append(listener)
        return lambda: self._notice_listeners.remove(listener)

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        """The candidates as last set."""
        return self._candidates

    def access(self, uri: str) -> Access | None:
        """The last check result of a candidate allowed for some server (``None`` if not checked)."""
        return self._access.get(uri)

    def set_candidates(self, candidates: Sequence[Candidate]) -> None:
        """Replace the candidates (duplicates by URI are merged away: the first wins)."""
        unique: dict[str, Candidate] = {}
        for candidate in candidates:
            unique.setdefault(candidate.uri, candidate)
        self._candidates = tuple(unique.values())
        self.invalidate()

    def set_server(self, server_id: str, identity: ServerIdentity) -> None:
        """Add a server, or change its identity (which changes what it is allowed)."""
        if self._servers.get(server_id) != identity:
            self._servers[server_id] = identity
            self._roots.setdefault(server_id, ())
            self.invalidate()

    def remove_server(self, server_id: str) -> None:
        """Forget a server; it gets no more change events."""
        self._servers.pop(server_id, None)
        self._roots.pop(server_id, None)

    def roots_for(self, server_id: str) -> tuple[Root, ...]:
        """The server's effective roots now, without waiting (``()`` for an unknown server).

        Consent is checked again here, so a revoked folder is never answered even before the
        re-computation that announces the change has run.
        """
        identity = self._servers.get(server_id)
        if identity is None:
            return ()
        roots = self._roots.get(server_id, ())
        return tuple(r for r in roots if self._allowed(identity, r.uri))

    def visible_through(self, server_id: str) -> tuple[VisibleThrough, ...]:
        """Candidates the server sees only because a folder containing them is shared with it."""
        return visible_through(self._candidates, (root.uri for root in self.roots_for(server_id)))

    def identity(self, server_id: str) -> ServerIdentity | None:
        """The identity the server's consent is looked up under, if it is known."""
        return self._servers.get(server_id)

    def invalidate(self) -> None:
        """Ask for a re-computation soon; safe to call from any thread."""
        if self._token is None or threading.get_ident() == self._loop_thread:
            self._dirty.set()
        else:
            anyio.from_thread.run_sync(self._dirty.set, token=self._token)

    async def refresh(self) -> set[str]:
        """Re-check every candidate and re-compute every server's roots now.

        Returns the ids of servers whose list changed; their listeners have been called.
        """
        async with self._refreshing:
            return await self._refresh()

    async def _refresh(self) -> set[str]:
        identities = list(self._servers.values())
        shared = [c for c in self._candidates if any(self._allowed(identity, c.uri) for identity in identities)]
        checks = await self._check_all(shared)
        previous = self._access
        self._access = checks
        for uri, access in checks.items():
            if previous.get(uri, Access.OK) != access:
                self._notify_access(uri, access)
        if self._watcher.watch(self._watch_set(shared)) and self._tasks is not None:
            self._tasks.start_soon(self._recheck_after, _WATCH_SETTLE)
        changed: set[str] = set()
        for server_id, identity in list(self._servers.items()):
            roots = tuple(
                Root(uri=c.uri, name=c.name)
                for c in self._candidates
                if checks.get(c.uri) is Access.OK and self._allowed(identity, c.uri)
            )
            if self._roots.get(server_id) != roots:
                self._roots[server_id] = roots
                changed.add(server_id)
                for listener in list(self._roots_listeners):
                    listener(server_id, roots)
        return changed

    async def run(self) -> None:
        """Keep the registry current until cancelled: debounced re-computation, watching and polling."""
        self._loop_thread = threading.get_ident()
        self._token = anyio.lowlevel.current_token()
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            tasks.start_soon(self._watcher.run)
            if self._poll_interval is not None:
                tasks.start_soon(self._poll, self._poll_interval)
            try:
                while True:
                    await self._dirty.wait()
                    await anyio.sleep(self._debounce)
                    self._dirty = anyio.Event()
                    try:
                        await self.refresh()
                    except Exception:
                        logger.exception("re-computing roots failed; keeping the previous lists")
            finally:
                self._token = None
                self._tasks = None
                tasks.cancel_scope.cancel()

    async def _recheck_after(self, delay: float) -> None:
        await anyio.sleep(delay)
        self._dirty.set()

    async def _poll(self, interval: float) -> None:
        while True:
            await anyio.sleep(interval)
            self._dirty.set()

    def _on_fs_change(self, paths: set[str]) -> None:
        logger.debug("file-system change under watched folders: %s", sorted(paths))
        self._dirty.set()

    def _allowed(self, identity: ServerIdentity, uri: str) -> bool:
        try:
            return self._consent.is_allowed(identity, parse_file_uri(uri))
        except UriError:
            return False

    async def _check_all(self, candidates: Iterable[Candidate]) -> dict[str, Access]:
        results: dict[str, Access] = {}

        async def check(candidate: Candidate) -> None:
            results[candidate.uri] = Access.UNAVAILABLE
            with anyio.move_on_after(self._check_timeout):
                results[candidate.uri] = await anyio.to_thread.run_sync(
                    self._checker, candidate, abandon_on_cancel=True, limiter=self._limiter
                )

        async with anyio.create_task_group() as tasks:
            for candidate in candidates:
                tasks.start_soon(check, candidate)
        return results

    @staticmethod
    def _watch_set(candidates: Iterable[Candidate]) -> set[str]:
        paths: set[str] = set()
        for candidate in candidates:
            for uri in (candidate.uri, candidate.declared_uri):
                if uri is None:
                    continue
                try:
                    path = parse_file_uri(uri)
                except UriError:
                    continue
                parent = os.path.dirname(path)
                if parent and parent != path:
                    paths.add(parent)
        return paths

    def _notify_access(self, uri: str, access: Access) -> None:
        if access is Access.OK:
            message = f"{uri} is accessible again and is shared as you allowed"
        else:
            message = f"{uri} {_ACCESS_MESSAGES[access]}"
            logger.warning("%s", message)
        notice = AccessNotice(uri=uri, access=access, message=message)
        for listener in list(self._notice_listeners):
            listener(notice)
