"""The headless sidecar: MCP Host Bridge for agents in a folder that no editor has open.

``host-bridge attach`` starts one (``python -m host_bridge.hosts.headless --workspace FOLDER``) when no sidecar
serves the folder. It runs the core over the user's storage folder with the servers the folder's own config files
define (``.vscode/mcp.json``, ``.mcp.json``), and the gateway registered under the folder, marked headless.

It uses only saved decisions and never asks: a folder nobody decided about is not shared, a server defined in the
folder that is not trusted is not started (an agent asking for it is refused at once, with the ``host-bridge consent
trust`` command), and ``attach`` is told which ``host-bridge consent allow`` command shares the folder. A decision made
that way reaches it like any other sidecar (the core watches the consent file). Its servers are published for
``host-bridge consent`` (:mod:`host_bridge.hub.running`).

One per workspace: it holds a lock on ``gateway/headless-<digest>.lock`` for its life, and a second one started for
the same folder exits at once (``attach`` then finds the first). An editor's sidecar started later for the folder is
preferred by every later ``attach`` (:func:`host_bridge.gateway.registry.find_sidecar`). It exits ``idle`` seconds
after its last agent left (or after starting, when none came), and on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import logging
import os
import signal
import sys
from collections.abc import Generator, Sequence
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread

from host_bridge.core import open_core
from host_bridge.gateway import registry
from host_bridge.gateway.service import Gateway
from host_bridge.gateway.settings import GatewaySettings
from host_bridge.hub.config import load_servers
from host_bridge.hub.hub import Hub
from host_bridge.hub.models import ServerStatus
from host_bridge.hub.running import RunningServer, RunningSidecar, publish, withdraw
from host_bridge.sandbox.refusals import Refusal
from host_bridge.storage import default_storage_dir
from host_bridge.uris import path_to_uri
from host_bridge.workspace.detect import detect
from host_bridge.workspace.models import WorkspaceFolder

logger = logging.getLogger(__name__)

IDLE_SECONDS = 30.0
"""Default seconds a headless sidecar stays after its last agent left."""
IDLE_CHECK = 0.5
"""Seconds between looks at whether agents are still connected."""


def lock_path(storage_dir: str | os.PathLike[str], workspace: str) -> Path:
    """The lock a headless sidecar for ``workspace`` (a real path) holds while it runs."""
    digest = hashlib.sha256(os.fsencode(workspace)).hexdigest()[:16]
    return registry.gateway_dir(storage_dir) / f"headless-{digest}.lock"


def log_path(storage_dir: str | os.PathLike[str], workspace: str) -> Path:
    """Where the headless sidecar for ``workspace`` writes its log (replaced at each start)."""
    return lock_path(storage_dir, workspace).with_suffix(".log")


@contextlib.contextmanager
def workspace_lock(storage_dir: str | os.PathLike[str], workspace: str) -> Generator[bool]:
    """Hold the workspace's headless lock while inside; yields ``False`` when another process holds it."""
    import fcntl

    path = lock_path(storage_dir, workspace)
    registry.private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


class _Events:
    """What the hub reports, in a sidecar nobody watches: state changes republish the servers, the rest is logged."""

    def __init__(self) -> None:
        self.changed = anyio.Event()

    def server_changed(self, status: ServerStatus) -> None:
        self.changed.set()

    def server_log(self, server_id: str, line: str) -> None:
        logger.debug("[%s] %s", server_id, line)

    def resources_changed(self, server_id: str) -> None:
        pass

    def resource_updated(self, server_id: str, uri: str) -> None:
        pass

    def notice(self, server_id: str | None, message: str) -> None:
        logger.warning("[%s] %s", server_id or "host-bridge", message)

    def sandbox_refused(self, server_id: str, refusal: Refusal) -> None:
        logger.warning("[%s] the sandbox refused %s", server_id, refusal)


async def run(workspace: str, storage_dir: str, *, idle: float = IDLE_SECONDS) -> None:
    """Serve agents for ``workspace`` (a real path) until ``idle`` seconds pass without one, or a signal."""
    events = _Events()
    registered: list[str] = []
    async with open_core(storage_dir, events) as core:
        gateway = Gateway(core.hub, storage_dir, folders=lambda: registered, settings=GatewaySettings(headless=True))
        # Listening first (unregistered): the servers' clients are made with the gateway's callbacks.
        await core.tasks.start(gateway.serve, name="agent gateway")
        detection = await anyio.to_thread.run_sync(detect, [WorkspaceFolder(uri=path_to_uri(workspace))])
        core.registry.set_candidates(detection.candidates)
        loaded = await anyio.to_thread.run_sync(lambda: load_servers(None, [workspace], read_workspace=True))
        for problem in loaded.problems:
            logger.warning("%s", problem.describe("servers"))
        await core.hub.configure(loaded.servers)
        core.tasks.start_soon(_publish, core.hub, storage_dir, workspace, events, name="running servers")
        registered.append(workspace)
        gateway.folders_changed()  # now attach finds it: its servers are known
        logger.info("serving agents for %s (pid %d)", workspace, os.getpid())
        try:
            with anyio.CancelScope() as scope:
                core.tasks.start_soon(_stop_on_signal, scope, name="signals")
                await _until_idle(gateway, idle)
                scope.cancel()
        finally:
            await anyio.to_thread.run_sync(withdraw, storage_dir, os.getpid())
            core.tasks.cancel_scope.cancel()


async def _until_idle(gateway: Gateway, idle: float) -> None:
    """Return once no agent has been connected for ``idle`` seconds."""
    quiet_since = anyio.current_time()
    while True:
        await anyio.sleep(min(IDLE_CHECK, idle))
        now = anyio.current_time()
        if gateway.sessions or gateway.listener.waiting_for_hello:
            quiet_since = now
        elif now - quiet_since >= idle:
            logger.info("no agent for %g s; stopping", idle)
            return


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def _publish(hub: Hub, storage_dir: str, workspace: str, events: _Events) -> None:
    """Keep ``sidecars/<pid>.json`` in step with the servers' states (one write per burst of changes)."""
    while True:
        servers = tuple(
            RunningServer(
                id=c.id, identity=c.config.identity, state=c.state.value, workspace_defined=c.config.workspace_defined
            )
            for c in hub.connections
        )
        sidecar = RunningSidecar(pid=os.getpid(), folders=(workspace,), servers=servers)
        await anyio.to_thread.run_sync(publish, storage_dir, sidecar)
        await events.changed.wait()
        events.changed = anyio.Event()
        await anyio.sleep(0)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m host_bridge.hosts.headless --workspace FOLDER [--storage-dir DIR] [--idle SECONDS]``."""
    parser = argparse.ArgumentParser(
        prog="host-bridge-headless", description="MCP Host Bridge for agents in a folder no editor has open."
    )
    parser.add_argument("--workspace", required=True, help="the folder agents work in")
    parser.add_argument("--storage-dir", help="where the consent store and the gateway's registry are")
    parser.add_argument("--idle", type=float, default=IDLE_SECONDS, help="seconds to stay after the last agent left")
    args = parser.parse_args(argv)
    workspace = os.path.realpath(args.workspace)
    storage_dir = args.storage_dir or default_storage_dir()
    with workspace_lock(storage_dir, workspace) as held:
        if not held:
            return 0  # another one serves this folder already
        logging.basicConfig(
            filename=log_path(storage_dir, workspace),
            filemode="w",
            level=logging.INFO,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(partial(run, workspace, storage_dir, idle=args.idle))
    return 0


if __name__ == "__main__":
    sys.exit(main())
