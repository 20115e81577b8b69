"""``connect --tools`` and ``connect --call TOOL``: a server's tools listed, one called, from the terminal.

host_bridge itself never calls a tool; an agent does, through the gateway. These options let a person try a server's
tools from the terminal (and let the MCP conformance suite check host_bridge as a client that calls tools).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp import MCPError

from host_bridge.hosts.tables import format_table, is_tty, table_width
from host_bridge.hosts.terminal.output import Terminal
from host_bridge.hub.hub import Hub
from host_bridge.hub.models import ServerState
from host_bridge.hub.resources.labels import sanitize_label

_MAX_PAGES = 100
"""Pages of ``tools/list`` read from one server at most (a server that pages without end)."""
NOT_USABLE = 1


def _tool_servers(hub: Hub, server_id: str | None) -> list[str]:
    return [
        c.id
        for c in hub.connections
        if c.state is ServerState.RUNNING
        and server_id in (None, c.id)
        and c.capabilities is not None
        and c.capabilities.tools is not None
    ]


async def _tools_of(hub: Hub, server: str) -> list[types.Tool]:
    client = hub.client(server)
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


async def list_tools(
    hub: Hub, server_id: str | None, terminal: Terminal, *, as_json: bool
) -> tuple[int, list[dict[str, Any]] | None]:
    """Print every running server's tools (or ``server_id``'s); the exit code and the ``--json`` entries."""
    rows: list[list[str]] = []
    entries: list[dict[str, Any]] = []
    code = 0
    for server in _tool_servers(hub, server_id):
        try:
            tools = await _tools_of(hub, server)
        except MCPError as error:
            hub.report_error(server, error)
            terminal.warn(f"host-bridge connect: [{server}] could not list its tools: {sanitize_label(error.message)}")
            code = NOT_USABLE
            continue
        for tool in tools:
            rows.append([sanitize_label(tool.name), server, sanitize_label(tool.description or "")])
            entries.append({"server": server, "name": tool.name, "description": tool.description})
    if as_json:
        return code, entries
    if rows:
        terminal.result(format_table(["TOOL", "SERVER", "DESCRIPTION"], rows, width=table_width(terminal.out)))
    else:
        terminal.warn("no running server offers tools")
    return code, None


async def call_tool(
    hub: Hub, server_id: str | None, name: str, arguments: dict[str, Any], terminal: Terminal, *, as_json: bool
) -> tuple[int, dict[str, Any] | None]:
    """Call ``name`` on ``server_id`` (or on the first running server that lists it) and print what it returned;
    the exit code (1 when the call failed or the tool reported an error) and the ``--json`` entry."""
    servers = _tool_servers(hub, server_id)
    target: str | None = server_id if server_id in servers else None
    if target is None:
        for server in servers:
            try:
                if any(tool.name == name for tool in await _tools_of(hub, server)):
                    target = server
                    break
            except MCPError as error:
                hub.report_error(server, error)
                terminal.warn(f"[{server}] could not list its tools: {sanitize_label(error.message)}")
    if target is None:
        terminal.warn(f"host-bridge connect: no running server offers the tool {sanitize_label(name)!r}")
        return NOT_USABLE, None
    try:
        result = await hub.client(target).call_tool(name, arguments)
    except MCPError as error:
        hub.report_error(target, error)
        terminal.warn(f"host-bridge connect: [{target}] the call of {name!r} failed: {sanitize_label(error.message)}")
        return NOT_USABLE, None
    code = NOT_USABLE if result.is_error else 0
    if as_json:
        return code, {"server": target, **result.model_dump(mode="json", by_alias=True, exclude_none=True)}
    for content in result.content:
        if isinstance(content, types.TextContent):
            terminal.result(sanitize_label(content.text) if is_tty(terminal.out) else content.text)
        else:
            terminal.result(f"<{content.type} content>")
    if result.is_error:
        terminal.warn(f"host-bridge connect: [{target}] the tool {name!r} reported an error")
    return code, None
