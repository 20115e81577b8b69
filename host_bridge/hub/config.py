"""MCP server configurations: editor settings, ``.vscode/mcp.json`` and ``.mcp.json``.

Entries use VS Code's ``mcp.json`` ``servers`` format (``type`` stdio|http, ``command``, ``args``, ``env``,
``envFile``, ``cwd``, ``url``, ``headers``) or Claude's ``.mcp.json`` ``mcpServers`` format (the same fields,
``type`` optional). Variables ``${workspaceFolder}``, ``${workspaceFolderBasename}``, ``${userHome}``,
``${env:NAME}``, ``${pathSeparator}`` and ``${/}`` are substituted. A bad entry becomes a
:class:`ConfigProblem` naming the file, the server id and the reason; the other entries still load.

Each server also gets what a person needs to judge it before it runs (:class:`ServerRef`): where it is defined,
the executable its command resolves to with its own ``PATH`` and working directory, the names of its environment
variables (with the values of those that change what runs, such as ``PATH``), its ``envFile``, the names of the
user's environment variables it reads, and its header names. Secret values are never part of it.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from host_bridge.consent.fingerprint import LaunchSpec, OAuthSettings, TransportKind, fingerprint
from host_bridge.consent.identity import SETTINGS_SOURCE, ServerIdentity
from host_bridge.hub.loops import attach_loop
from host_bridge.hub.models import ConfiguredServer, EnvVar, ServerRef
from host_bridge.jsonc import JsoncError, loads_jsonc
from host_bridge.safe_read import RepoFileError, read_repo_text
from host_bridge.uris import UriError, parse_file_uri, path_to_uri
from host_bridge.wire import WireModel

SHARED_FOLDERS = "${hostBridge:sharedFolders}"
"""In ``args``, ``env`` or ``cwd``: the folders shared with the server, filled in at each start
(:mod:`host_bridge.hub.launch`)."""
MAX_WORKSPACE_SERVERS = 64
"""Servers one workspace file may define; the rest are a config problem (each would be a process and a prompt)."""
MAX_CONFIG_BYTES = 1 << 20
"""Config files larger than this are refused (they are hand-written and small)."""

_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_SERVER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@/+-]{0,127}$")


RUN_CHANGING_VARIABLES = frozenset(
    {
        "LD_PRELOAD",
        "LD_AUDIT",
        "DYLD_INSERT_LIBRARIES",
        "NODE_OPTIONS",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PYTHONINSPECT",
        "PERL5OPT",
        "RUBYOPT",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "BASH_ENV",
        "ENV",
        "NPM_CONFIG_PREFIX",
        "GIT_EXEC_PATH",
    }
)
"""Environment variables besides ``*PATH`` whose value decides which code runs; prompts show their values."""


def shows_value(name: str) -> bool:
    """Whether a prompt shows the value of environment variable ``name`` (it decides which code runs)."""
    return name.upper().endswith("PATH") or name.upper() in RUN_CHANGING_VARIABLES


class ServerConfig(ConfiguredServer, LaunchSpec):
    """One fully resolved server: its launch fields (:class:`LaunchSpec`) with variables substituted and its env file
    merged, and what names it."""

    workspace_defined: bool = False
    """Defined by a file inside a workspace folder: needs the user's trust before its first start."""
    origin: str = SETTINGS_SOURCE
    """Where it is defined, for its identity: ``settings``, or the real path of its config file."""
    executable: str | None = None
    """What :attr:`command` resolves to (see :attr:`ServerRef.executable`)."""
    env_file: str | None = None
    """The ``envFile`` (absolute path) its environment was read from."""
    env_file_names: frozenset[str] = frozenset()
    """Names in :attr:`env` that came from :attr:`env_file`."""
    env_references: tuple[str, ...] = ()
    """Names of the user's environment variables its config reads."""

    @property
    def uses_shared_folders(self) -> bool:
        """Whether ``${hostBridge:sharedFolders}`` is in its ``args``, ``env`` or ``cwd``."""
        texts = (*self.args, *self.env.values(), self.cwd or "")
        return any(SHARED_FOLDERS in text for text in texts)

    # Properties, not cached: a config copied with other fields must never keep the old fingerprint.
    @property
    def fingerprint(self) -> str:
        """Hash of its launch fields; a changed launch config means new consent."""
        return fingerprint(self)

    @property
    def identity(self) -> ServerIdentity:
        """Who its consent and trust belong to: (where defined, id, launch fingerprint)."""
        return ServerIdentity(source=self.origin, server_id=self.id, fingerprint=self.fingerprint)

    def ref(self) -> ServerRef:
        """The editor-facing description."""
        ref = ServerRef(
            id=self.id,
            label=self.label,
            source=self.source,
            transport=self.transport,
            identity=self.identity.key,
            workspace_defined=self.workspace_defined,
            env_references=self.env_references,
        )
        return ref.model_copy(update=_KINDS[self.transport].describe(self))


class ConfigProblem(WireModel):
    """A config file or entry that could not be used."""

    source: str
    """``settings`` or the file's URI."""
    server_id: str | None = None
    """The entry concerned, if the problem is in one entry."""
    message: str
    """What is wrong and what to do."""

    def describe(self, settings: str) -> str:
        """The problem as a sentence naming where it is: ``settings`` (what the user calls the settings source)
        or the config file's path, then the entry."""
        if self.source == SETTINGS_SOURCE:
            where = settings
        else:
            try:
                where = parse_file_uri(self.source)
            except UriError:
                where = self.source
        if self.server_id:
            where += f", server {self.server_id!r}"
        elif where in self.message:
            return self.message
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class ServerSet:
    """The result of loading every configuration source."""

    servers: tuple[ServerConfig, ...]
    """Usable servers, ids unique, in source order (settings first)."""
    problems: tuple[ConfigProblem, ...] = field(default=())
    """Everything that was skipped, and why."""


class _Entry(BaseModel):
    """One raw entry as written in a config file; unknown keys are ignored as VS Code does."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    type: str | None = None
    command: str | None = None
    args: list[str | int | float] = Field(default_factory=list[str | int | float])
    env: dict[str, str | int | float | bool | None] = Field(default_factory=dict[str, str | int | float | bool | None])
    env_file: str | None = Field(default=None, alias="envFile")
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    sandbox: str | None = None
    network: str | None = None
    unix_sockets: str | None = Field(default=None, alias="unixSockets")
    oauth: _OAuthEntry | None = None


class _OAuthEntry(BaseModel):
    """An http entry's ``"oauth"`` object as written."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    client_id: str | None = Field(default=None, alias="clientId")
    client_secret: str | None = Field(default=None, alias="clientSecret")
    client_metadata_url: str | None = Field(default=None, alias="clientMetadataUrl")
    callback_port: int | None = Field(default=None, alias="callbackPort", ge=1, le=65535)


_Entry.model_rebuild()


@dataclass(frozen=True)
class _Context:
    """What variables resolve to for one source."""

    folder: str | None
    environ: Mapping[str, str]
    home: str
    origin: str = SETTINGS_SOURCE
    """The identity source of its servers: ``settings`` or the config file's real path."""
    references: set[str] = field(default_factory=set[str])
    """``${env:NAME}`` names read while resolving the current entry."""


class _EntryError(ValueError):
    pass


def load_servers(
    settings: Mapping[str, Any] | None,
    folders: Sequence[str],
    *,
    read_workspace: bool = True,
    environ: Mapping[str, str] | None = None,
    home: str | None = None,
) -> ServerSet:
    """Load the editor's ``settings`` servers and, if ``read_workspace``, each folder's config files.

    ``folders`` are workspace folder paths (canonical). Ids must be unique: the first definition wins
    (settings, then folders in order, ``.vscode/mcp.json`` before ``.mcp.json``) and later ones are reported.
    """
    env = dict(os.environ if environ is None else environ)
    home_dir = home if home is not None else str(Path.home())
    servers: dict[str, ServerConfig] = {}
    problems: list[ConfigProblem] = []

    def add(entries: Iterable[tuple[str, Any]], source: str, context: _Context, workspace: bool) -> None:
        entries = list(entries)
        if workspace and len(entries) > MAX_WORKSPACE_SERVERS:
            message = (
                f"it defines {len(entries)} servers; only the first {MAX_WORKSPACE_SERVERS} are used "
                "(a workspace file with more is not a configuration a person wrote)"
            )
            problems.append(ConfigProblem(source=source, message=message))
            entries = entries[:MAX_WORKSPACE_SERVERS]
        for server_id, raw in entries:
            try:
                config = _resolve(server_id, raw, source, context, workspace)
            except _EntryError as error:
                problems.append(ConfigProblem(source=source, server_id=server_id, message=str(error)))
                continue
            if server_id in servers:
                problems.append(
                    ConfigProblem(
                        source=source,
                        server_id=server_id,
                        message=f"server id {server_id!r} is already defined in {servers[server_id].source}; "
                        "this definition is ignored (rename one of them)",
                    )
                )
                continue
            servers[server_id] = config

    if settings:
        add(settings.items(), SETTINGS_SOURCE, _Context(folders[0] if folders else None, env, home_dir), False)
    if read_workspace:
        for folder in folders:
            for relative, key in ((".vscode/mcp.json", "servers"), (".mcp.json", "mcpServers")):
                path = os.path.join(folder, relative)
                entries = _read_file(path, key, problems)
                if entries is not None:
                    file_context = _Context(folder, env, home_dir, origin=os.path.realpath(path))
                    add(entries.items(), path_to_uri(path), file_context, True)
    return ServerSet(servers=tuple(servers.values()), problems=tuple(problems))


def _read_file(path: str, key: str, problems: list[ConfigProblem]) -> dict[str, Any] | None:
    """The ``key`` object of the config file at ``path`` (``None`` when it is missing or unusable, with a problem)."""
    source = path_to_uri(path)
    try:
        text = read_repo_text(path, MAX_CONFIG_BYTES)
    except RepoFileError as error:
        if error.problem != "missing":
            problems.append(ConfigProblem(source=source, message=f"{error}; its servers were not loaded"))
        return None
    try:
        document = loads_jsonc(text)
    except JsoncError as error:
        problems.append(ConfigProblem(source=source, message=f"{path} is not valid JSON: {error}; fix the file"))
        return None
    if not isinstance(document, dict):
        problems.append(ConfigProblem(source=source, message=f"{path} must hold a JSON object"))
        return None
    entries = document.get(key)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if entries is None:
        return {}
    if not isinstance(entries, dict):
        problems.append(ConfigProblem(source=source, message=f"{path}: {key!r} must be an object of servers"))
        return None
    return {str(k): v for k, v in entries.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def _resolve(server_id: str, raw: Any, source: str, context: _Context, workspace: bool) -> ServerConfig:
    if not _SERVER_ID.match(server_id):
        raise _EntryError(f"server id {server_id!r} must be 1–128 letters, digits or ._@/+- characters")
    if not isinstance(raw, dict):
        raise _EntryError("the entry must be an object with a command (stdio) or a url (http)")
    try:
        entry = _Entry.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise _EntryError(f"field {where!r}: {first['msg']}") from None
    # Claude's .mcp.json may leave the type out: an entry with a url and no command is then an HTTP server.
    name = (entry.type or ("http" if entry.url and not entry.command else "stdio")).lower()
    kind = next((kind for kind in _KINDS.values() if name in kind.type_names), None)
    if kind is None and name == "sse":
        raise _EntryError('the legacy SSE transport is not supported; use "type": "http" (streamable HTTP)')
    if kind is None:
        known = " or ".join(f'"{known}"' for known in _KINDS)
        raise _EntryError(f"unknown type {entry.type!r}; use {known}")
    context.references.clear()
    return kind.resolve(server_id, entry, source, context, workspace)


def _stdio(server_id: str, entry: _Entry, source: str, context: _Context, workspace: bool) -> ServerConfig:
    """A stdio entry resolved: variables, its env file, its working directory, its executable."""
    if not entry.command:
        raise _EntryError('a stdio server needs a "command"')
    env: dict[str, str] = {}
    env_file: str | None = None
    from_file: set[str] = set()
    if entry.env_file:
        env_file = _absolute_env_file(_expand(entry.env_file, context), context)
        env.update(_read_env_file(env_file))
        from_file.update(env)
    for name, value in entry.env.items():
        if value is not None:
            env[name] = _expand(_scalar(value), context, launch_time=True)
            from_file.discard(name)
    cwd = _expand(entry.cwd, context, launch_time=True) if entry.cwd else (context.folder if workspace else None)
    if cwd is not None and not os.path.isabs(cwd) and SHARED_FOLDERS not in cwd:
        base = context.folder or context.home
        cwd = os.path.normpath(os.path.join(base, cwd))
    command = _expand(entry.command, context)
    args = tuple(_expand(_scalar(a), context, launch_time=True) for a in entry.args)
    if entry.oauth is not None:
        raise _EntryError('"oauth" applies to http servers; remove it')
    if entry.sandbox not in (None, "enforce", "off"):
        raise _EntryError(f'sandbox {entry.sandbox!r} must be "enforce" or "off"')
    if entry.network not in (None, "on", "off"):
        raise _EntryError(f'network {entry.network!r} must be "on" or "off"')
    if entry.unix_sockets not in (None, "allow", "refuse"):
        raise _EntryError(f'unixSockets {entry.unix_sockets!r} must be "allow" or "refuse"')
    resolve_in = None if cwd is None or SHARED_FOLDERS in cwd else cwd
    if (loop := attach_loop(command, args)) is not None:
        raise _EntryError(loop)
    return ServerConfig(
        id=server_id,
        label=server_id,
        source=source,
        transport="stdio",
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        workspace_defined=workspace,
        origin=context.origin,
        executable=resolve_executable(command, env.get("PATH", context.environ.get("PATH")), resolve_in),
        env_file=env_file,
        env_file_names=frozenset(from_file),
        env_references=tuple(sorted(context.references)),
        sandbox=entry.sandbox,  # pyright: ignore[reportArgumentType]  (checked just above)
        network=entry.network,  # pyright: ignore[reportArgumentType]
        unix_sockets=entry.unix_sockets,  # pyright: ignore[reportArgumentType]
    )


def resolve_executable(command: str, path: str | None, cwd: str | None) -> str | None:
    """The absolute path ``command`` runs as for a child with ``PATH`` ``path`` started in ``cwd``, or ``None``.

    As the operating system does for the child: a command with a directory part is taken relative to ``cwd``;
    otherwise each ``PATH`` entry is searched in order, relative entries (``.``, ``bin``) taken relative to ``cwd``.
    """
    base = cwd or os.getcwd()
    if os.path.dirname(command):
        candidate = os.path.normpath(os.path.join(base, command))
        return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None
    directories = [
        entry if os.path.isabs(entry) else os.path.normpath(os.path.join(base, entry or "."))
        for entry in (path if path is not None else os.defpath).split(os.pathsep)
    ]
    return shutil.which(command, path=os.pathsep.join(directories))


def _stdio_described(config: ServerConfig) -> dict[str, Any]:
    """What a prompt shows of a stdio server: what runs, where, with which environment (names; values of PATH-like
    variables), and whether its folders or sandbox depend on consent."""
    env = tuple(
        EnvVar(name=name, value=value if shows_value(name) else None, from_env_file=name in config.env_file_names)
        for name, value in sorted(config.env.items())
    )
    return {
        "command": config.command,
        "args": config.args,
        "executable": config.executable,
        "cwd": config.cwd,
        "env": env,
        "env_file": config.env_file,
        "passes_shared_folders": config.uses_shared_folders,
        "sandbox_setting": config.sandbox,
    }


def _http(server_id: str, entry: _Entry, source: str, context: _Context, workspace: bool) -> ServerConfig:
    """An http entry resolved: its URL (http or https) and headers, variables substituted."""
    if not entry.url:
        raise _EntryError('an http server needs a "url"')
    for key, value in (("sandbox", entry.sandbox), ("network", entry.network), ("unixSockets", entry.unix_sockets)):
        if value is not None:
            raise _EntryError(f'"{key}" applies to stdio servers, which run on this machine; remove it')
    url = _expand(entry.url, context)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _EntryError(f"url {url!r} must be an http:// or https:// address")
    headers = {name: _expand(value, context) for name, value in entry.headers.items()}
    return ServerConfig(
        id=server_id,
        label=server_id,
        source=source,
        transport="http",
        url=url,
        headers=headers,
        workspace_defined=workspace,
        origin=context.origin,
        oauth=_oauth(entry.oauth, context),
        env_references=tuple(sorted(context.references)),
    )


def _oauth(entry: _OAuthEntry | None, context: _Context) -> OAuthSettings | None:
    if entry is None:
        return None
    metadata_url = _expand(entry.client_metadata_url, context) if entry.client_metadata_url else None
    if metadata_url is not None:
        parts = urlsplit(metadata_url)
        if parts.scheme != "https" or parts.path in ("", "/"):
            raise _EntryError(
                f"oauth.clientMetadataUrl {metadata_url!r} must be an https:// URL with a path (the client ID metadata "
                "document)"
            )
    secret = _expand(entry.client_secret, context) if entry.client_secret else None
    if secret and not entry.client_id:
        raise _EntryError("oauth.clientSecret needs oauth.clientId (the client it belongs to)")
    return OAuthSettings(
        client_id=_expand(entry.client_id, context) if entry.client_id else None,
        client_secret=secret or None,  # pyright: ignore[reportArgumentType]  (pydantic makes it a SecretStr)
        client_metadata_url=metadata_url,
        callback_port=entry.callback_port,
    )


def _http_described(config: ServerConfig) -> dict[str, Any]:
    """What a prompt shows of an http server: its URL and the names of its headers (never their values)."""
    return {"url": config.url, "header_names": tuple(sorted(config.headers))}


@dataclass(frozen=True)
class _Kind:
    """One transport as config files write it."""

    type_names: tuple[str, ...]
    """The entry ``type`` values that select it (compared in lower case)."""
    resolve: Callable[[str, _Entry, str, _Context, bool], ServerConfig]
    """(id, entry, source, context, workspace-defined) → the config, or :class:`_EntryError`."""
    describe: Callable[[ServerConfig], dict[str, Any]]
    """The :class:`ServerRef` fields that describe a server of it."""


_KINDS: Mapping[TransportKind, _Kind] = {
    "stdio": _Kind(("stdio",), _stdio, _stdio_described),
    "http": _Kind(("http", "streamable-http", "streamablehttp"), _http, _http_described),
}
"""Every transport a config entry may name; how each is run is :mod:`host_bridge.hub.transports`."""


def _scalar(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _expand(text: str, context: _Context, *, launch_time: bool = False) -> str:
    """``text`` with variables substituted; ``${hostBridge:sharedFolders}`` is kept for each start where
    ``launch_time`` (args, env and cwd of a stdio server) and refused elsewhere."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "hostBridge:sharedFolders":
            if launch_time:
                return SHARED_FOLDERS
            raise _EntryError(f'{SHARED_FOLDERS} can be used only in "args", "env" and "cwd" of a stdio server')
        if name == "workspaceFolder" and context.folder:
            return context.folder
        if name == "workspaceFolderBasename" and context.folder:
            return os.path.basename(context.folder)
        if name == "userHome":
            return context.home
        if name in ("pathSeparator", "/"):
            return os.sep
        if name.startswith("env:"):
            context.references.add(name[4:])
            return context.environ.get(name[4:], "")
        if name.startswith("input:"):
            raise _EntryError(
                f"${{{name}}} asks for input, which host_bridge cannot prompt for; "
                "put the value in the editor's hostBridge.servers setting instead"
            )
        if name in ("workspaceFolder", "workspaceFolderBasename"):
            raise _EntryError(f"${{{name}}} is used but no workspace folder is open")
        raise _EntryError(f"unknown variable ${{{name}}}")

    return _VARIABLE.sub(replace, text)


def _absolute_env_file(path: str, context: _Context) -> str:
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(context.folder or context.home, path))


def _read_env_file(path: str) -> dict[str, str]:
    try:
        lines = read_repo_text(path, MAX_CONFIG_BYTES).splitlines()
    except RepoFileError as error:
        raise _EntryError(f"envFile: {error}") from None
    values: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[name.strip()] = value
    return values


def load_config_file(path: str, *, environ: Mapping[str, str] | None = None, home: str | None = None) -> ServerSet:
    """Load the servers of one config file the user named (``host-bridge connect --config FILE``).

    The file is ``.vscode/mcp.json``-style (``servers``) or ``.mcp.json``-style (``mcpServers``); ``servers``
    is used when it has entries. ``${workspaceFolder}`` is the folder holding the file (the parent of a
    ``.vscode`` folder). The user chose the file, so its servers are not workspace-defined and need no trust.
    """
    absolute = os.path.abspath(path)
    source = path_to_uri(absolute)
    if not os.path.isfile(absolute):
        return ServerSet(servers=(), problems=(ConfigProblem(source=source, message=f"{path} is not a file"),))
    problems: list[ConfigProblem] = []
    entries = _read_file(absolute, "servers", problems)
    if entries == {}:
        entries = _read_file(absolute, "mcpServers", problems)
    folder = os.path.dirname(absolute)
    if os.path.basename(folder) == ".vscode":
        folder = os.path.dirname(folder)
    context = _Context(
        folder,
        dict(os.environ if environ is None else environ),
        home if home is not None else str(Path.home()),
        origin=os.path.realpath(absolute),
    )
    servers: list[ServerConfig] = []
    for server_id, raw in (entries or {}).items():
        try:
            servers.append(_resolve(server_id, raw, source, context, False))
        except _EntryError as error:
            problems.append(ConfigProblem(source=source, server_id=server_id, message=str(error)))
    if entries == {} and not problems:
        message = f'{path} has no servers: put them under "servers" (mcp.json) or "mcpServers" (.mcp.json)'
        problems.append(ConfigProblem(source=source, message=message))
    return ServerSet(servers=tuple(servers), problems=tuple(problems))
