"""What the benchmarks measure host_bridge against: the bare SDK doing the same work."""

from __future__ import annotations

from mcp import Client


async def walk_resources(client: Client) -> int:
    """List every resource of one server page by page; the number listed."""
    total, cursor = 0, None
    while True:
        page = await client.list_resources(cursor=cursor)
        total += len(page.resources)
        cursor = page.next_cursor
        if cursor is None:
            return total
