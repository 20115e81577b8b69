"""Server fingerprints: one hash of everything that decides which code runs and what it can reach.

Consent is keyed by this fingerprint, so editing a server's command, arguments, environment, working
directory, URL or headers after the user agreed yields a new fingerprint and therefore no roots until the
user agrees again (docs/security.md B7).
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import Field

from host_bridge.wire import WireModel

TransportKind = Literal["stdio", "http"]
"""How the sidecar talks to a server: a child process over stdio, or a URL over streamable HTTP."""

_FORMAT = 1
"""Bumped whenever the canonical form changes; part of the hashed text so old and new never collide."""


class LaunchSpec(WireModel):
    """How one MCP server is started (stdio) or reached (http), as far as consent is concerned."""

    transport: TransportKind
    """``stdio`` for a local child process, ``http`` for a server reached by URL."""
    command: str | None = None
    """Executable of a stdio server."""
    args: tuple[str, ...] = ()
    """Arguments of a stdio server, in order."""
    env: dict[str, str] = Field(default_factory=dict[str, str])
    """Extra environment variables of a stdio server; their order does not matter."""
    cwd: str | None = None
    """Working directory of a stdio server."""
    url: str | None = None
    """Endpoint of an http server."""
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    """HTTP headers sent to an http server; they can select another account or tenant, so they count."""
    sandbox: Literal["enforce", "off"] | None = None
    """The server's own sandbox setting (stdio); ``None`` follows the user's default. Turning it off widens what the
    server can reach, so it counts."""
    network: Literal["on", "off"] | None = None
    """The server's own network setting (stdio); ``None`` follows the user's default."""
    unix_sockets: Literal["allow", "refuse"] | None = None
    """Whether it may reach other programs' UNIX sockets (stdio; only the user's own settings can allow it)."""


def fingerprint(spec: LaunchSpec) -> str:
    """``sha256:<hex>`` of a canonical JSON of ``spec``; any change of a launch field changes it.

    Environment variables are ordered by name; header names are compared case-insensitively, as HTTP
    does. Values (which may hold secrets) only enter the hash, never the result.
    """
    canonical = {
        "format": _FORMAT,
        "transport": spec.transport,
        "command": spec.command,
        "args": list(spec.args),
        "env": sorted([name, value] for name, value in spec.env.items()),
        "cwd": spec.cwd,
        "url": spec.url,
        "headers": sorted([name.lower(), value] for name, value in spec.headers.items()),
    }
    if spec.sandbox is not None:
        # Only when set, so configs that never name it keep the fingerprint they always had.
        canonical["sandbox"] = spec.sandbox
    if spec.network is not None:
        canonical["network"] = spec.network
    if spec.unix_sockets is not None:
        canonical["unixSockets"] = spec.unix_sockets
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
