"""The one line each side sends before MCP starts on a gateway connection.

``attach`` sends a :class:`Hello` naming the server it wants; the gateway answers with one :class:`HelloAnswer`. After
a positive answer, either both sides speak MCP on the connection (JSON-RPC messages, one per line, as on stdio) until
either closes, or, when both offered it (:attr:`Hello.handover`, :attr:`HelloAnswer.handover`), ``attach`` sends its
stdin and stdout (one byte carrying the two descriptors, ``SCM_RIGHTS``) and the gateway serves the agent's MCP session
on them directly, with no process relaying in between; the connection then only tells ``attach`` how the session
ended (one :class:`SessionEnd` line) and tells the gateway, by closing, that ``attach`` is gone.
"""

from __future__ import annotations

from typing import Literal

from host_bridge.wire import WireModel

MAX_HELLO_BYTES = 64 * 1024
"""Longest hello line accepted, newline included."""


class AgentProcess(WireModel):
    """Who is attaching: the ``attach`` process and the agent that started it (for the audit log)."""

    pid: int
    """The ``attach`` process."""
    parent_pid: int | None = None
    """The process that started ``attach`` (the agent: VS Code's extension host, Claude Code …)."""
    parent_name: str | None = None
    """That process's name, as the operating system reports it."""
    cwd: str | None = None
    """``attach``'s working directory."""


class Hello(WireModel):
    """``attach`` → gateway: which server this connection is for."""

    host_bridge_gateway: Literal[1] = 1
    """Marks the line and its format version."""
    server: str
    """The server id, as configured for the sidecar."""
    agent: AgentProcess
    """Who is attaching."""
    handover: bool = False
    """``attach`` can hand over its stdin and stdout (both are pipes or sockets)."""
    secret: str | None = None
    """The sidecar's secret, from its registry entry: only processes that can read the storage directory (never a
    sandboxed server) have it."""


class HelloAnswer(WireModel):
    """Gateway → ``attach``: MCP can start, or why not."""

    ok: bool
    """MCP follows on this connection."""
    error: str | None = None
    """Why not, as a sentence that names what to do."""
    reason: Literal["unknownServer", "notRunning", "badHello", "refused", "closing"] | None = None
    """What kind of refusal it is."""
    session: str | None = None
    """The id of this agent session in the gateway's audit log."""
    handover: bool = False
    """The gateway takes ``attach``'s stdin and stdout (only when the hello offered them)."""
    advice: str | None = None
    """A sentence for the user, which ``attach`` prints once on stderr (a headless sidecar names the ``host-bridge
    consent`` command that shares the folder)."""


class SessionEnd(WireModel):
    """Gateway → ``attach``, after a handover: the agent session ended."""

    agent_closed: bool
    """The agent closed its side (``attach`` exits with 0); else the gateway ended the session."""
    reason: str | None = None
    """Why the gateway ended it, as a sentence."""
