"""A core with its gateway open, and agents that reach it through real ``host-bridge attach`` processes."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from host_bridge.consent.policy import ConsentPolicy, Decision
from host_bridge.core import CoreSettings, open_core
from host_bridge.gateway.service import Gateway, GatewaySettings
from host_bridge.hub.config import ServerConfig
from host_bridge.hub.hub import Hub
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.uris import canonical_path
from host_bridge.workspace.models import Candidate
from support.hub_harness import Recorder


@dataclass
class GatewayHarness:
    """The running core, its gateway, and where things are."""

    hub: Hub
    policy: ConsentPolicy
    gateway: Gateway
    storage: Path
    workspace: Path
    recorder: Recorder

    def allow(self, server_id: str, folder: Path) -> None:
        identity = self.hub.connection(server_id).config.identity
        self.policy.set(identity, canonical_path(folder), Decision.ALLOW)

    def attach_command(self, server_id: str) -> StdioServerParameters:
        """How an agent starts ``attach`` for ``server_id`` of this workspace."""
        return StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "host_bridge",
                "attach",
                server_id,
                "--workspace",
                str(self.workspace),
                "--storage-dir",
                str(self.storage),
            ],
            env=dict(os.environ),
        )

    def agent(self, server_id: str, **options: Any) -> Client:
        """An SDK client (the agent) over ``attach``; enter it to connect."""
        options.setdefault("mode", "legacy")
        return Client(self.attach_command(server_id), **options)


@asynccontextmanager
async def gateway_hub(
    storage: Path,
    workspace: Path,
    servers: list[ServerConfig],
    candidates: list[Candidate],
    *,
    settings: GatewaySettings | None = None,
) -> AsyncIterator[GatewayHarness]:
    """Open the core, its gateway (registered under ``workspace``), then the servers; everything stops on exit.

    The OS sandbox is off: the fixture servers write their records outside their shared folders."""
    recorder = Recorder()
    core_settings = CoreSettings(
        connection=ConnectionSettings(initialize_timeout=20, request_timeout=20, sandbox="off"),
        roots_poll_interval=None,
    )
    async with open_core(storage, recorder, settings=core_settings) as core:
        gateway = Gateway(core.hub, str(storage), folders=lambda: [str(workspace)], settings=settings)
        await core.tasks.start(gateway.serve)
        core.registry.set_candidates(candidates)
        await core.hub.configure(servers)
        yield GatewayHarness(core.hub, core.policy, gateway, storage, workspace, recorder)
