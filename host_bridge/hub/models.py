"""What the editor is told about MCP servers: the hub's wire models for servers and their states.

Kept apart from the modules that run servers (:mod:`host_bridge.hub.connection`, :mod:`host_bridge.hub.hub`), which
import the ``mcp`` SDK: the editor channel's message table and the TypeScript generator read these models without
loading the SDK. This module never imports ``mcp`` (docs/architecture.md, "Architecture invariants"; checked by
import-linter).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from host_bridge.roots import VisibleThrough
from host_bridge.sandbox.confinement import Channel
from host_bridge.sandbox.diagnosis import StartDiagnosis
from host_bridge.wire import WireModel


class ConfiguredServer(WireModel):
    """A server as its configuration names it: the fields every description of a server starts with."""

    id: str
    """Unique id (the key in the config's ``servers`` map)."""
    label: str
    """Display name."""
    source: str
    """``settings``, or the URI of the config file that defines it."""


class EnvVar(WireModel):
    """One environment variable a server is given, as a prompt shows it."""

    name: str
    """Its name."""
    value: str | None = None
    """Its value, only for variables that decide which code runs (``PATH``, ``PYTHONPATH``, ``NODE_OPTIONS`` …);
    other values may be secrets and are never shown."""
    from_env_file: bool = False
    """It comes from the server's ``envFile``."""


class ServerRef(ConfiguredServer):
    """What the editor is shown of a server (docs/protocol.md ``ServerRef``); never secret values."""

    transport: Literal["stdio", "http"]
    """How it is reached."""
    command: str | None = None
    """Command of a stdio server, as written in its config."""
    args: tuple[str, ...] | None = None
    """Arguments of a stdio server."""
    url: str | None = None
    """Endpoint of an http server."""
    identity: str = ""
    """Opaque key of the server identity (where defined, id, launch fingerprint) that consent and trust belong to;
    two servers with the same command line have different identities."""
    workspace_defined: bool = False
    """Defined by a file inside a workspace folder, so it runs only once the user trusts it."""
    executable: str | None = None
    """Absolute path the command resolves to with the server's own ``PATH`` and working directory (stdio);
    absent when it resolves to nothing."""
    cwd: str | None = None
    """Working directory of a stdio server."""
    env: tuple[EnvVar, ...] = ()
    """Environment variables its config sets (names; values only where they decide which code runs)."""
    env_file: str | None = None
    """The ``envFile`` its environment is read from."""
    env_references: tuple[str, ...] = ()
    """Names of *your* environment variables its config reads (``${env:NAME}``): their values go to the server."""
    header_names: tuple[str, ...] = ()
    """Names of the HTTP headers sent to an http server (values may be secrets and are never shown)."""
    passes_shared_folders: bool = False
    """Its ``args``, ``env`` or ``cwd`` use ``${hostBridge:sharedFolders}``: the folders shared with it are passed
    on its command line (and it is restarted when they change)."""
    sandbox_setting: Literal["enforce", "off"] | None = None
    """Its config's own ``"sandbox"`` setting (stdio); absent: the user's default applies."""


class ServerState(StrEnum):
    """Where a server is in its life (docs/protocol.md ``ServerStatus.state``)."""

    AWAITING_TRUST = "awaitingTrust"
    AWAITING_FOLDERS = "awaitingFolders"
    """Its launch needs shared folders (``${hostBridge:sharedFolders}``) and none is shared: it starts once one is."""
    STARTING = "starting"
    RUNNING = "running"
    RESTARTING = "restarting"
    STOPPED = "stopped"
    FAILED = "failed"


class SharedRoot(WireModel):
    """A folder shared with a server (``ServerStatus.sharedRoots``)."""

    uri: str
    """Canonical ``file://`` URI."""
    name: str | None = None
    """Name shown to the server."""


class ResourceCapabilities(WireModel):
    """What the server declared about resources."""

    subscribe: bool = False
    """It accepts ``resources/subscribe``."""
    list_changed: bool = False
    """It sends ``notifications/resources/list_changed``."""


Reach = Literal["roots", "launch", "sandbox"]
"""How shared folders reach a server: ``roots`` it asked for, its command line (``${hostBridge:sharedFolders}``), its
sandbox (which confines it to them)."""


class SandboxState(WireModel):
    """The OS sandbox a stdio server runs in."""

    setting: Literal["enforce", "off"]
    """What its config (or the user's default) asks for."""
    enforced: bool
    """Whether the operating system enforces it for the current start (``false`` when off, or not supported here);
    while ``planned``, whether it will for the first start."""
    planned: bool = False
    """The server has not started yet: ``enforced``, ``mechanism`` and ``summary`` say what its first start will get
    on this machine, so that a trust question can say what will confine it."""
    mechanism: str | None = None
    """``landlock``, ``sandbox-exec`` or ``none``."""
    summary: str
    """One sentence: what it may reach, or why it is not enforced."""
    warnings: tuple[str, ...] = ()
    """What the policy lets it reach that the user may not expect: e.g. its runtime lies in a workspace folder that is
    not shared with it (so that folder is readable), or a shared folder holds the whole home folder."""
    network: Literal["on", "off"] = "on"
    """Its network setting in effect (a workspace file cannot turn it on)."""
    unix_sockets: bool = False
    """The user let it reach other programs' UNIX sockets (Docker, ssh-agent, the session bus)."""
    read_only: tuple[str, ...] = ()
    """Shared folders it may only read (canonical paths)."""
    channels: tuple[Channel, ...] = ()
    """What this machine's kernel refuses it besides files, channel by channel (Linux), and what it cannot."""
    start_failure: StartDiagnosis | None = None
    """Set when its last start failed while the sandbox confined it: that the sandbox may be the cause, the paths it
    was refused where they can be known, and the actions offered (cleared once it runs)."""


class SignInStatus(WireModel):
    """Where an http server's sign-in stands (``ServerStatus.signIn``); never a token."""

    state: Literal["signedIn", "waiting", "required"]
    """``signedIn``: host_bridge holds tokens for it; ``waiting``: the user was sent to sign in and host_bridge waits
    for the browser to come back; ``required``: it needs a sign-in and none is under way (restart it to sign in)."""
    message: str | None = None
    """What happened and what to do, in words for a person."""


class ServerStatus(ServerRef):
    """A server as the editor sees it (docs/protocol.md ``ServerStatus``)."""

    state: ServerState
    """Where it is in its life."""
    protocol_version: str | None = None
    """The negotiated protocol revision, once connected."""
    server_info: dict[str, Any] | None = None
    """The server's ``serverInfo`` (name, version …)."""
    resources: ResourceCapabilities | None = None
    """Its resource capabilities; absent when it has none."""
    shared_roots: tuple[SharedRoot, ...] = ()
    """The folders it may see now."""
    visible_through: tuple[VisibleThrough, ...] = ()
    """Candidate folders not shared themselves that it sees anyway, inside a shared folder."""
    last_error: str | None = None
    """Why it last failed, in words a person can act on."""
    roots_asked_at: datetime | None = None
    """When it last asked for its roots; absent when it never did (then ``sharedRoots`` are only *offered* to it,
    unless ``reach`` says they reach it another way)."""
    reach: tuple[Reach, ...] = ()
    """How the shared folders reach it now."""
    sandbox: SandboxState | None = None
    """Its OS sandbox (stdio servers)."""
    sign_in: SignInStatus | None = None
    """Its sign-in (http servers that asked for one)."""
