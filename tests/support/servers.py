"""Editor-style config entries (``{"type": "stdio", "command": …}``) for the fixture and reference MCP servers."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from support.paths import PEERS, SERVERS


def python_server(name: str, *args: str) -> dict[str, Any]:
    """Config entry running the fixture server ``tests/servers/<name>.py`` with this interpreter."""
    return {"type": "stdio", "command": sys.executable, "args": [str(SERVERS / f"{name}.py"), *args]}


def resources_server(*args: str) -> dict[str, Any]:
    """Config entry for ``tests/servers/resources_server.py``."""
    return python_server("resources_server", *args)


def roots_recorder(record: Path) -> dict[str, Any]:
    """Config entry for the fixture server that records every roots answer in ``record``.

    Pinned to the handshake era, so it fetches its roots after ``initialized`` and on every ``list_changed``.
    """
    return python_server("roots_recorder", "--pin", "2025-11-25", "--record", str(record))


def peer_server(package: str, *args: str) -> dict[str, Any]:
    """Config entry running a pinned reference server from tests/peers with node."""
    node = shutil.which("node") or "node"
    return {"type": "stdio", "command": node, "args": [str(PEERS / package / "dist" / "index.js"), *args]}
