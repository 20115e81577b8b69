"""Watch a changing set of directories, non-recursively, and report that something changed.

The roots registry watches the parents of shared folders (a folder being deleted, renamed, re-permissioned or a
symlink leading to it being retargeted all show up as events on its parent), the consent store watcher its storage
folder, and the sidecar's workspace feature the folders that hold config files.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable

import anyio
import watchfiles

logger = logging.getLogger(__name__)


class DirectoryWatcher:
    """Calls ``on_change`` whenever an entry changes directly inside one of the watched directories.

    The set of directories can be replaced at any time with :meth:`watch`; :meth:`run` owns the
    underlying OS watch for its whole life and restarts it when the set changes.
    """

    def __init__(self, on_change: Callable[[set[str]], None], *, debounce_ms: int = 50) -> None:
        self._on_change = on_change
        self._debounce_ms = debounce_ms
        self._paths: frozenset[str] = frozenset()
        """Directories watched now."""
        self._replaced = anyio.Event()
        """Set when :attr:`_paths` changed and the OS watch must be restarted."""
        self._closed = False
        """Set once :meth:`run` is being cancelled."""

    def watch(self, paths: Iterable[str]) -> bool:
        """Replace the watched set (missing directories are skipped until they exist); whether it changed.

        The new OS watch starts a moment later: a change in between is not reported, so a caller that must
        not miss one checks again shortly after a replacement.
        """
        new = frozenset(paths)
        if new == self._paths:
            return False
        self._paths = new
        self._replaced.set()
        return True

    async def run(self) -> None:
        """Watch until cancelled."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._watch_loop)
            try:
                await anyio.sleep_forever()
            finally:
                # The OS watch blocks in a worker thread that cancellation cannot interrupt; the stop
                # event is what makes it return.
                self._closed = True
                self._replaced.set()

    async def _watch_loop(self) -> None:
        while not self._closed:
            self._replaced = anyio.Event()
            existing = sorted(p for p in self._paths if os.path.isdir(p))
            if not existing:
                await self._replaced.wait()
                continue
            try:
                # awatch's stop_event type mentions trio, which is not installed.
                async for changes in watchfiles.awatch(  # pyright: ignore[reportUnknownMemberType]
                    *existing,
                    recursive=False,
                    debounce=self._debounce_ms,
                    step=20,
                    stop_event=self._replaced,
                    watch_filter=None,
                    rust_timeout=2000,
                    yield_on_timeout=False,
                ):
                    self._on_change({path for _, path in changes})
            except (OSError, RuntimeError) as error:
                # A watched folder vanished under the watcher or the OS ran out of watches: the caller's
                # periodic re-check still covers these folders; retry when the set changes.
                logger.warning("cannot watch %s: %s; relying on periodic re-checks", ", ".join(existing), error)
                self._on_change(set(existing))
                await self._replaced.wait()
