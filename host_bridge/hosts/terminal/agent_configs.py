"""Agent configuration files that route MCP servers through ``host-bridge attach``: what each format's entry looks
like, and changing a file so that only those entries change.

Formats: ``mcpServers`` JSON (Claude Code's and VS Code's agent sessions' ``.mcp.json``, Gemini CLI's
``settings.json``), ``servers`` JSON (``.vscode/mcp.json``) and Codex's ``config.toml`` (``[mcp_servers.ID]`` tables).
JSON files are read, the entries set under their key and written back with every other key as it was; in a TOML
file only the tables of the entries written are replaced, every other line stays byte for byte.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePath
from typing import Any, cast

from host_bridge.hub.loops import attach_loop


class Format(StrEnum):
    """How a configuration file holds MCP servers."""

    MCP_SERVERS = "mcpServers"
    """A JSON object under ``mcpServers`` (``.mcp.json``, Gemini CLI's ``settings.json``)."""
    SERVERS = "servers"
    """A JSON object under ``servers``, each with ``type`` (``.vscode/mcp.json``)."""
    CODEX = "codex"
    """TOML tables ``[mcp_servers.ID]`` (Codex's ``config.toml``)."""


class ConfigError(Exception):
    """A file that cannot be changed safely (not JSON, not TOML, not an object …); the message says why."""


@dataclass(frozen=True)
class Entry:
    """One server an agent starts: its name in the agent's configuration, and the command line."""

    name: str
    command: str
    args: tuple[str, ...]


def format_of(path: str) -> Format:
    """The format of a configuration file, by its name."""
    pure = PurePath(path)
    if pure.suffix == ".toml":
        return Format.CODEX
    if pure.name == "mcp.json" and pure.parent.name == ".vscode":
        return Format.SERVERS
    return Format.MCP_SERVERS


def json_entry(entry: Entry, fmt: Format) -> dict[str, Any]:
    """The entry as a JSON configuration holds it."""
    body: dict[str, Any] = {"command": entry.command, "args": list(entry.args)}
    return {"type": "stdio", **body} if fmt is Format.SERVERS else body


def toml_entry(entry: Entry) -> str:
    """The entry as Codex's ``config.toml`` holds it (one table)."""
    args = ", ".join(json.dumps(arg) for arg in entry.args)
    return f"[mcp_servers.{_toml_key(entry.name)}]\ncommand = {json.dumps(entry.command)}\nargs = [{args}]\n"


def _toml_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


def existing_servers(text: str, fmt: Format) -> dict[str, dict[str, Any]]:
    """The server entries a file's ``text`` holds now (name → entry); a :class:`ConfigError` when it is not valid."""
    if not text.strip():
        return {}
    if fmt is Format.CODEX:
        try:
            document: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"it is not valid TOML ({error})") from None
        servers: Any = document.get("mcp_servers", {})
    else:
        document = _json_object(text)
        servers = document.get(fmt.value, {})
    if not isinstance(servers, dict):
        raise ConfigError(f"its {'mcp_servers' if fmt is Format.CODEX else fmt.value} is not a table of servers")
    return {str(k): cast(dict[str, Any], v) for k, v in cast(dict[Any, Any], servers).items() if isinstance(v, dict)}


def _json_object(text: str) -> dict[str, Any]:
    try:
        document: Any = json.loads(text)
    except ValueError as error:
        raise ConfigError(f"it is not valid JSON ({error})") from None
    if not isinstance(document, dict):
        raise ConfigError("it is not a JSON object")
    return cast(dict[str, Any], document)


def with_entries(text: str, fmt: Format, entries: Sequence[Entry]) -> str:
    """``text`` with ``entries`` set (added, or replacing entries of the same name) and everything else kept."""
    if fmt is Format.CODEX:
        return _toml_with(text, entries)
    document = _json_object(text) if text.strip() else {}
    servers: Any = document.get(fmt.value, {})
    if not isinstance(servers, dict):
        raise ConfigError(f"its {fmt.value} is not an object of servers")
    updated = dict(cast(dict[str, Any], servers))
    for entry in entries:
        updated[entry.name] = json_entry(entry, fmt)
    document[fmt.value] = updated
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


_TABLE = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _toml_with(text: str, entries: Sequence[Entry]) -> str:
    existing_servers(text, Format.CODEX)  # refuse a file that is not valid TOML before touching it
    names = {_toml_key(entry.name) for entry in entries} | {json.dumps(entry.name) for entry in entries}
    replaced = {f"mcp_servers.{name}" for name in names}
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        header = _TABLE.match(line)
        if header is not None:
            table = re.sub(r"\s*\.\s*", ".", header.group(1))
            skipping = table in replaced or any(table.startswith(name + ".") for name in replaced)
        if not skipping:
            kept.append(line)
    result = "".join(kept)
    if result and not result.endswith("\n"):
        result += "\n"
    blocks = "\n".join(toml_entry(entry) for entry in entries)
    result = f"{result}\n{blocks}" if result.strip() else blocks
    tomllib.loads(result)  # what is written parses
    return result


def is_attach(entry: Mapping[str, Any]) -> bool:
    """Whether a configured entry runs ``host-bridge attach`` (it goes through host_bridge)."""
    command = entry.get("command")
    args: Any = entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    return attach_loop(command, [str(a) for a in cast(list[Any], args)]) is not None
