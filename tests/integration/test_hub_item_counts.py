"""Answers with too many items, through the real hub and stdio transport (docs/security.md H2).

The fixture (``resources_server.py --fault many-items``) answers listings and reads with 200 000 tiny items in one
piece, a few MB of JSON. The SDK would validate them into 200 000 pydantic models before the broker saw them; the
transport refuses such an answer where it parses the line, so memory stays near the size of the parsed JSON.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hub_harness import PeakGrowth, configs, running_hub
from support.servers import python_server

from host_bridge.hub.errors import UpstreamError
from host_bridge.hub.settings import ConnectionSettings

pytestmark = pytest.mark.anyio

MANY = 200_000
LIMITS = ConnectionSettings(initialize_timeout=20, request_timeout=20, max_page_items=1_000, max_read_contents=100)


@pytest.mark.requirement("H2")
async def test_a_page_a_template_list_or_a_read_with_too_many_items_fails_clearly_with_bounded_memory(
    tmp_path: Path,
) -> None:
    servers = configs({"many": python_server("resources_server", "--fault", "many-items", "--many", str(MANY))})
    async with running_hub(tmp_path / "storage", servers, connection_settings=LIMITS) as h:
        await h.wait_running("many")
        broker = h.hub.broker

        with PeakGrowth() as growth, pytest.raises(UpstreamError) as page:
            await broker.list_resources("many")
        assert page.value.message == (
            "MCP server 'many': its resources/list answer held 200000 resources in one page, over host_bridge's "
            "limit of 1000 per page; the page was refused (the server must split its list into pages with nextCursor)"
        )
        assert growth.mib < 150, f"listing 200 000 items grew memory by {growth.mib:.0f} MiB"

        with pytest.raises(UpstreamError) as templates:
            await broker.list_templates("many")
        assert "held 200000 resource templates in one page, over host_bridge's limit of 1000" in templates.value.message

        with PeakGrowth() as growth, pytest.raises(UpstreamError) as read:
            await broker.read("many", "test://many/1")
        assert read.value.message.startswith(
            "MCP server 'many': its resources/read answer held 200000 content items, over host_bridge's limit of "
            "100 per read"
        )
        assert growth.mib < 100, f"reading 200 000 contents grew memory by {growth.mib:.0f} MiB"

        aggregated = await broker.list_resources()
        assert aggregated.items == () and len(aggregated.warnings) == 1
        assert "200000 resources" in aggregated.warnings[0]
        assert h.state("many") == "running", "a refused answer is the request's failure, not the connection's"
        assert (await broker.read("many", "test://res/1")).contents[0].text == "content of res 1"
