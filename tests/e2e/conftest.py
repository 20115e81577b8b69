"""e2e fixtures: the sidecar started as ``python -m host_bridge serve`` and driven by the test editor of
:mod:`support.sidecar`, and the workspace folders it opens."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from support.folders import project
from support.sidecar import SIDECAR, WAIT, BridgeClient


@pytest_lsp.fixture(config=SIDECAR)
async def client(lsp_client: BridgeClient) -> AsyncIterator[None]:
    """A running sidecar; shut down politely afterwards unless the test ended it."""
    yield
    server = lsp_client._server  # pyright: ignore[reportPrivateUsage]
    if server is not None and server.returncode is None:
        if lsp_client.capabilities is not None:
            await asyncio.wait_for(lsp_client.shutdown_session(), WAIT)
        else:
            server.kill()  # the test failed before initialize: nobody will end the session politely


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """Two project folders, ``alpha`` and ``beta``, each with a ``pyproject.toml`` naming it."""
    return project(tmp_path / "ws" / "alpha"), project(tmp_path / "ws" / "beta")
