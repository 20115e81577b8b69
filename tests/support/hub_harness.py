"""A real hub wired like the sidecar wires it, plus a recorder of what it reports, for integration tests."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from host_bridge.consent.policy import ConsentPolicy, Decision
from host_bridge.core import CoreSettings, open_core
from host_bridge.hub.config import ServerConfig, load_servers
from host_bridge.hub.hub import Hub
from host_bridge.hub.launch import SandboxSetting
from host_bridge.hub.models import ServerStatus
from host_bridge.hub.resources.models import ResourceSettings
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.roots import RootsRegistry
from host_bridge.sandbox.refusals import Refusal
from host_bridge.uris import canonical_path
from host_bridge.workspace.models import Candidate
from support.processes import reset_peak, status_kib

WAIT = 30.0


def configs(entries: dict[str, dict[str, Any]]) -> list[ServerConfig]:
    """Resolve editor-style entries into server configs (failing loudly on a bad entry)."""
    result = load_servers(entries, [])
    assert not result.problems, result.problems
    return list(result.servers)


@dataclass
class Recorder:
    """Collects every hub event; tests wait on conditions over what arrived."""

    statuses: list[ServerStatus] = field(default_factory=list[ServerStatus])
    logs: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    list_changes: list[str] = field(default_factory=list[str])
    updates: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    notices: list[tuple[str | None, str]] = field(default_factory=list[tuple[str | None, str]])
    refusals: list[tuple[str, Refusal]] = field(default_factory=list[tuple[str, Refusal]])
    _arrived: anyio.Event = field(default_factory=anyio.Event)

    def server_changed(self, status: ServerStatus) -> None:
        self.statuses.append(status)
        self._poke()

    def server_log(self, server_id: str, line: str) -> None:
        self.logs.append((server_id, line))
        self._poke()

    def resources_changed(self, server_id: str) -> None:
        self.list_changes.append(server_id)
        self._poke()

    def resource_updated(self, server_id: str, uri: str) -> None:
        self.updates.append((server_id, uri))
        self._poke()

    def notice(self, server_id: str | None, message: str) -> None:
        self.notices.append((server_id, message))
        self._poke()

    def sandbox_refused(self, server_id: str, refusal: Refusal) -> None:
        self.refusals.append((server_id, refusal))
        self._poke()

    def poke(self) -> None:
        """Wake waiters for a condition that does not come from an event (e.g. a file written by a server)."""
        self._poke()

    def _poke(self) -> None:
        self._arrived.set()

    async def wait_for(self, condition: Callable[[], bool], timeout: float = WAIT, poll: float | None = None) -> None:
        """Wait until ``condition()`` holds; ``poll`` re-checks periodically for conditions on files."""
        with anyio.fail_after(timeout):
            while not condition():
                self._arrived = anyio.Event()
                if poll is None:
                    await self._arrived.wait()
                else:
                    with anyio.move_on_after(poll):
                        await self._arrived.wait()

    def log_lines(self, server_id: str) -> list[str]:
        return [line for sid, line in self.logs if sid == server_id]


@dataclass
class Harness:
    """A running hub and its parts."""

    hub: Hub
    policy: ConsentPolicy
    registry: RootsRegistry
    recorder: Recorder
    storage: Path

    def allow(self, server_id: str, folder: Path, decision: Decision = Decision.ALLOW) -> None:
        identity = self.hub.connection(server_id).config.identity
        self.policy.set(identity, canonical_path(folder), decision)

    def forget(self, server_id: str, folder: Path) -> None:
        identity = self.hub.connection(server_id).config.identity
        self.policy.forget(identity, canonical_path(folder))

    def state(self, server_id: str) -> str:
        return self.hub.connection(server_id).state.value

    async def wait_running(self, *server_ids: str) -> None:
        await self.recorder.wait_for(lambda: all(self.state(s) == "running" for s in server_ids))


@asynccontextmanager
async def running_hub(
    storage: Path,
    servers: Sequence[ServerConfig],
    candidates: Sequence[Candidate] = (),
    *,
    connection_settings: ConnectionSettings | None = None,
    resource_settings: ResourceSettings | None = None,
    sandbox: SandboxSetting = "off",
) -> AsyncIterator[Harness]:
    """Start the core (as every host does) with real consent storage; stops every server on exit.

    The OS sandbox is off unless asked for: the fixture servers write their records outside their shared folders.
    """
    recorder = Recorder()
    connection = connection_settings or ConnectionSettings(initialize_timeout=20, request_timeout=20)
    settings = CoreSettings(
        connection=dataclasses.replace(connection, sandbox=sandbox),
        resources=resource_settings or ResourceSettings(),
        roots_poll_interval=None,
    )
    async with open_core(storage, recorder, settings=settings) as core:
        core.registry.set_candidates(candidates)
        await core.hub.configure(servers)
        yield Harness(core.hub, core.policy, core.registry, recorder, storage)


class PeakGrowth:
    """How far this process's resident memory peaked above where it stood when the block began, in MiB.

    The kernel's high-water mark is reset at the start (``/proc/self/clear_refs``), so earlier tests do not count.
    """

    def __init__(self) -> None:
        self.mib = 0.0

    def __enter__(self) -> PeakGrowth:
        self._start = reset_peak("self")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.mib = (status_kib("self", "VmHWM") - self._start) / 1024
