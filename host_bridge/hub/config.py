"""MCP server configurations: editor settings, ``.vscode/mcp.json`` and ``.mcp.json``.

Entries use VS Code's ``mcp.json`` ``servers`` format (``type`` stdio|http, ``command``, ``args``, ``env``,
``envFile``, ``cwd``, ``url``, ``headers``) or Claude's ``.mcp.json`` ``mcpServers`` format (the same fields,
``type`` optional). Variables ``${workspaceFolder}``, ``${workspaceFolderBasename}``, ``${userHome}``,
``${env:NAME}``, ``${pathSeparator}`` and ``${/}`` are substituted. A bad entry becomes a
:class:`ConfigProblem` naming the file, the server id and the reason; the other entries still load.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from host_bridge.consent.fingerprint import LaunchSpec, fingerprint
from host_bridge.hub.jsonc import JsoncError, loads_jsonc
from host_bridge.uris import UriError, parse_file_uri, path_to_uri
from host_bridge.wire import WireModel

SETTINGS_SOURCE = "settings"
"""``source`` of servers that come from the editor's settings (initializationOptions)."""
MAX_CONFIG_BYTES = 1 << 20
"""Config files larger than this are refused (they are hand-written and small)."""

_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_SERVER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@/+-]{0,127}$")


class ServerRef(WireModel):
    """What the editor is shown of a server (DESIGN.md ``ServerRef``); never env values or headers."""

    id: str
    """Unique id (the key in the config's ``servers`` map)."""
    label: str
    """Display name."""
    source: str
    """``settings``, or the URI of the config file that defines it."""
    transport: Literal["stdio", "http"]
    """How it is reached."""
    command: str | None = None
    """Executable of a stdio server."""
    args: tuple[str, ...] | None = None
    """Arguments of a stdio server."""
    url: str | None = None
    """Endpoint of an http server."""


class ServerConfig(WireModel):
    """One fully resolved server: variables substituted, env file merged."""

    id: str
    """Unique id."""
    label: str
    """Display name."""
    source: str
    """``settings`` or the config file's URI."""
    transport: Literal["stdio", "http"]
    """How it is reached."""
    command: str | None = None
    """Executable (stdio)."""
    args: tuple[str, ...] = ()
    """Arguments (stdio)."""
    env: dict[str, str] = Field(default_factory=dict[str, str])
    """Extra environment (stdio)."""
    cwd: str | None = None
    """Working directory (stdio)."""
    url: str | None = None
    """Endpoint (http)."""
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    """HTTP headers (http)."""
    workspace_defined: bool = False
    """Defined by a file inside a workspace folder: needs the user's trust before its first start."""

    @cached_property
    def launch(self) -> LaunchSpec:
        """The launch fields that consent is keyed on."""
        return LaunchSpec(
            transport=self.transport, command=self.command, args=self.args, env=self.env, cwd=self.cwd,
            url=self.url, headers=self.headers,
        )

    @cached_property
    def fingerprint(self) -> str:
        """Hash of :attr:`launch`; a changed launch config means new consent."""
        return fingerprint(self.launch)

    def ref(self) -> ServerRef:
        """The editor-facing description."""
        if self.transport == "stdio":
            return ServerRef(
                id=self.id, label=self.label, source=self.source, transport="stdio", command=self.command,
                args=self.args,
            )
        return ServerRef(id=self.id, label=self.label, source=self.source, transport="http", url=self.url)


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


@dataclass(frozen=True)
class _Context:
    """What variables resolve to for one source."""

    folder: str | None
    environ: Mapping[str, str]
    home: str


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
        for server_id, raw in entries:
            try:
                config = _resolve(server_id, raw, source, context, workspace)
            except _EntryError as error:
                problems.append(ConfigProblem(source=source, server_id=server_id, message=str(error)))
                continue
            if server_id in servers:
                problems.append(
                    ConfigProblem(
                        source=source, server_id=server_id,
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
            context = _Context(folder, env, home_dir)
            for relative, key in ((".vscode/mcp.json", "servers"), (".mcp.json", "mcpServers")):
                path = os.path.join(folder, relative)
                entries = _read_file(path, key, problems)
                if entries is not None:
                    add(entries.items(), path_to_uri(path), context, True)
    return ServerSet(servers=tuple(servers.values()), problems=tuple(problems))


def _read_file(path: str, key: str, problems: list[ConfigProblem]) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        problems.append(ConfigProblem(source=path_to_uri(path), message=f"cannot read {path}: {error.strerror}"))
        return None
    source = path_to_uri(path)
    if len(data) > MAX_CONFIG_BYTES:
        problems.append(ConfigProblem(source=source, message=f"{path} is larger than 1 MiB; it was not read"))
        return None
    try:
        document = loads_jsonc(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, JsoncError) as error:
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
    kind = (entry.type or ("http" if entry.url and not entry.command else "stdio")).lower()
    if kind == "stdio":
        return _stdio(server_id, entry, source, context, workspace)
    if kind in ("http", "streamable-http", "streamablehttp"):
        return _http(server_id, entry, source, context, workspace)
    if kind == "sse":
        raise _EntryError("the legacy SSE transport is not supported; use \"type\": \"http\" (streamable HTTP)")
    raise _EntryError(f"unknown type {entry.type!r}; use \"stdio\" or \"http\"")


def _stdio(server_id: str, entry: _Entry, source: str, context: _Context, workspace: bool) -> ServerConfig:
    if not entry.command:
        raise _EntryError("a stdio server needs a \"command\"")
    env: dict[str, str] = {}
    if entry.env_file:
        env.update(_read_env_file(_expand(entry.env_file, context), context))
    for name, value in entry.env.items():
        if value is not None:
            env[name] = _expand(_scalar(value), context)
    cwd = _expand(entry.cwd, context) if entry.cwd else (context.folder if workspace else None)
    if cwd is not None and not os.path.isabs(cwd):
        base = context.folder or context.home
        cwd = os.path.normpath(os.path.join(base, cwd))
    return ServerConfig(
        id=server_id, label=server_id, source=source, transport="stdio",
        command=_expand(entry.command, context), args=tuple(_expand(_scalar(a), context) for a in entry.args),
        env=env, cwd=cwd, workspace_defined=workspace,
    )


def _http(server_id: str, entry: _Entry, source: str, context: _Context, workspace: bool) -> ServerConfig:
    if not entry.url:
        raise _EntryError("an http server needs a \"url\"")
    url = _expand(entry.url, context)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _EntryError(f"url {url!r} must be an http:// or https:// address")
    headers = {name: _expand(value, context) for name, value in entry.headers.items()}
    return ServerConfig(
        id=server_id, label=server_id, source=source, transport="http", url=url, headers=headers,
        workspace_defined=workspace,
    )


def _scalar(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _expand(text: str, context: _Context) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "workspaceFolder" and context.folder:
            return context.folder
        if name == "workspaceFolderBasename" and context.folder:
            return os.path.basename(context.folder)
        if name == "userHome":
            return context.home
        if name in ("pathSeparator", "/"):
            return os.sep
        if name.startswith("env:"):
            return context.environ.get(name[4:], "")
        if name.startswith("input:"):
            raise _EntryError(f"${{{name}}} asks for input, which host_bridge cannot prompt for; "
                              "put the value in the editor's hostBridge.servers setting instead")
        if name in ("workspaceFolder", "workspaceFolderBasename"):
            raise _EntryError(f"${{{name}}} is used but no workspace folder is open")
        raise _EntryError(f"unknown variable ${{{name}}}")

    return _VARIABLE.sub(replace, text)


def _read_env_file(path: str, context: _Context) -> dict[str, str]:
    if not os.path.isabs(path):
        path = os.path.join(context.folder or context.home, path)
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read(MAX_CONFIG_BYTES).splitlines()
    except OSError as error:
        raise _EntryError(f"cannot read envFile {path}: {error.strerror}") from None
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


def load_config_file(
    path: str, *, environ: Mapping[str, str] | None = None, home: str | None = None
) -> ServerSet:
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
        folder, dict(os.environ if environ is None else environ), home if home is not None else str(Path.home())
    )
    servers: list[ServerConfig] = []
    for server_id, raw in (entries or {}).items():
        try:
            servers.append(_resolve(server_id, raw, source, context, False))
        except _EntryError as error:
            problems.append(ConfigProblem(source=source, server_id=server_id, message=str(error)))
    if entries == {} and not problems:
        message = f"{path} has no servers: put them under \"servers\" (mcp.json) or \"mcpServers\" (.mcp.json)"
        problems.append(ConfigProblem(source=source, message=message))
    return ServerSet(servers=tuple(servers), problems=tuple(problems))
