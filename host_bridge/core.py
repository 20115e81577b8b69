"""The one place that builds the core: consent store → policy → roots registry → hub → audit, wired and running.

Every host (the editor sidecar, the terminal, the tests, benchmarks) opens the core here and adds no policy of its
own. The rules wired here: a consent change re-computes roots; a change another process makes to the consent file
is picked up within about a second; closing the core stops every MCP server, children included.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial

import anyio
import anyio.abc
import anyio.to_thread

from host_bridge.consent.policy import ConsentPolicy
from host_bridge.consent.store import ConsentStore, ConsentStoreError
from host_bridge.consent.watch import StoreWatcher
from host_bridge.hub.audit import AuditLog
from host_bridge.hub.hub import Hub, HubEvents
from host_bridge.hub.resources.models import ResourceSettings
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.roots import RootsRegistry

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CoreSettings:
    """How the core behaves; every field has a default."""

    connection: ConnectionSettings = field(default_factory=ConnectionSettings)
    """Timeouts and restart policy of MCP connections."""
    resources: ResourceSettings = field(default_factory=ResourceSettings)
    """Caps and pacing of the resource broker."""
    roots_poll_interval: float | None = 30.0
    """Seconds between re-checks of shared folders that deliver no file-system events (``None``: never)."""
    watch_store: bool = True
    """Pick up consent changes made by other processes (other windows, the terminal)."""
    lock_timeout: float = 5.0
    """Seconds a consent write waits for another process holding the store's lock."""


@dataclass(frozen=True)
class Core:
    """The running core."""

    store: ConsentStore
    """The durable consent file."""
    policy: ConsentPolicy
    """The user's consent: persisted and this session's decisions."""
    registry: RootsRegistry
    """Effective roots per server."""
    hub: Hub
    """Every MCP server."""
    tasks: anyio.abc.TaskGroup
    """Where a host runs its own background work; cancelled when the core closes."""


def load_store(storage_dir: str | os.PathLike[str], *, lock_timeout: float = 5.0) -> ConsentStore:
    """The consent store in ``storage_dir``, loaded; a problem is logged and the store fails closed."""
    store = ConsentStore(storage_dir, lock_timeout=lock_timeout)
    try:
        store.load()
    except ConsentStoreError as error:
        logger.warning("consent store: %s", error)
    return store


@asynccontextmanager
async def open_core(
    storage_dir: str | os.PathLike[str],
    events: HubEvents,
    *,
    settings: CoreSettings | None = None,
    audit: AuditLog | None = None,
    policy: ConsentPolicy | None = None,
) -> AsyncGenerator[Core]:
    """Build and run the core over ``storage_dir``; on exit stop every server and background task.

    ``events`` hears what the hub reports; ``audit`` records every ``roots/list`` answer (default: ``audit.jsonl``
    in ``storage_dir``). A consent store that cannot be used is logged and fails closed (nothing persisted is
    shared); :attr:`ConsentStore.problem` says why. ``policy`` is one already built over a store loaded from
    ``storage_dir`` (the terminal asks before its event loop starts); by default one is built here.
    """
    settings = settings or CoreSettings()
    if policy is None:
        policy = ConsentPolicy(
            await anyio.to_thread.run_sync(partial(load_store, storage_dir, lock_timeout=settings.lock_timeout))
        )
    store = policy.store
    registry = RootsRegistry(policy, poll_interval=settings.roots_poll_interval)
    policy.on_change(lambda _identities: registry.invalidate())
    hub = Hub(
        policy,
        registry,
        events,
        audit=audit if audit is not None else AuditLog(os.fspath(storage_dir)),
        connection_settings=settings.connection,
        resource_settings=settings.resources,
    )
    async with anyio.create_task_group() as tasks:
        await tasks.start(hub.run)
        if settings.watch_store:
            tasks.start_soon(StoreWatcher(policy).run, name="consent store watcher")
        try:
            yield Core(store=store, policy=policy, registry=registry, hub=hub, tasks=tasks)
        finally:
            tasks.cancel_scope.cancel()
