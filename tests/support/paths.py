"""Where the repository, the fixture servers and the pinned reference servers are."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root."""
TESTS = REPO / "tests"
SERVERS = TESTS / "servers"
"""The fixture MCP servers (tests/servers/README.md)."""
PEERS = TESTS / "peers" / "node_modules" / "@modelcontextprotocol"
"""The pinned reference MCP servers (tests/peers)."""
