"""One truth across windows: every process watches the consent file and re-reads it when another one changed it.

The storage folder is watched (non-recursively) for changes to ``consent.json``, and its stat signature is also
polled twice a second for file systems that deliver no events. A change is re-read in a worker thread (the file is
replaced atomically, so a read never sees half a write and never waits for a writer), and the policy's change
callbacks then re-compute roots: a folder revoked in one window stops being answered in every other one within
about a second, and a ``roots/list_changed`` follows (docs/security.md G1).
"""

from __future__ import annotations

import logging
import os

import anyio
import anyio.to_thread

from host_bridge.consent import files
from host_bridge.consent.policy import ConsentPolicy
from host_bridge.directory_watch import DirectoryWatcher

logger = logging.getLogger(__name__)

POLL_INTERVAL = 0.5
"""Seconds between stat checks of ``consent.json`` (for file systems without change events)."""


class StoreWatcher:
    """Re-reads the consent store whenever its file changes; :meth:`run` until cancelled."""

    def __init__(self, policy: ConsentPolicy, *, poll_interval: float = POLL_INTERVAL) -> None:
        self._policy = policy
        self._store = policy.store
        self._poll_interval = poll_interval
        self._changed = anyio.Event()
        self._watcher = DirectoryWatcher(self._on_event, debounce_ms=10)
        self.reloads = 0
        """How many times the file was re-read (tests and diagnostics)."""

    async def run(self) -> None:
        """Watch, poll and re-read until cancelled."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._watcher.run)
            tasks.start_soon(self._poll)
            while True:
                await self._changed.wait()
                self._changed = anyio.Event()
                await self._reload()

    async def _reload(self) -> None:
        try:
            affected = await anyio.to_thread.run_sync(self._policy.reload, abandon_on_cancel=True)
        except Exception:
            logger.exception("re-reading the consent store failed; keeping what was read before")
            return
        self.reloads += 1
        if affected:
            logger.info("consent changed in another window for %d server(s)", len(affected))

    def _on_event(self, paths: set[str]) -> None:
        if any(os.path.basename(path) == self._store.file_path.name for path in paths):
            self._changed.set()

    async def _poll(self) -> None:
        seen = files.stat_signature(self._store.file_path)
        while True:
            await anyio.sleep(self._poll_interval)
            if self._store.storage_dir.is_dir():
                self._watcher.watch([str(self._store.storage_dir)])
            current = files.stat_signature(self._store.file_path)
            if current != seen:
                seen = current
                self._changed.set()
