"""The pinned reference server-everything's resources come through the hub's broker unchanged."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from support.hub_harness import configs, running_hub
from support.servers import peer_server

pytestmark = pytest.mark.anyio


def everything() -> dict[str, object]:
    entry = peer_server("server-everything")
    entry["args"] = [*entry["args"], "stdio"]  # type: ignore[misc]
    return entry


async def test_static_documents_templates_completion_and_blob_read_come_through_unchanged(tmp_path: Path) -> None:
    entry = everything()
    params = StdioServerParameters(command=str(entry["command"]), args=list(entry["args"]))  # type: ignore[arg-type]
    with open(tmp_path / "direct.log", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="auto") as direct:
            direct_resources = (await direct.list_resources()).resources
            direct_templates = (await direct.list_resource_templates()).resource_templates
            direct_blob = await direct.read_resource("demo://resource/dynamic/blob/1")

    async with running_hub(tmp_path / "storage", configs({"everything": entry})) as harness:
        await harness.wait_running("everything")
        broker = harness.hub.broker

        listed = await broker.list_all("everything")
        assert len(listed) == 7
        assert [(r.uri, r.name, r.mime_type) for r in listed] == [
            (r.uri, r.name, r.mime_type) for r in direct_resources
        ]
        assert all(r.server == "everything" for r in listed)

        templates = await broker.list_templates("everything")
        assert [t.uri_template for t in templates] == [t.uri_template for t in direct_templates]
        assert len(templates) == 2
        assert all(t.variables == ("resourceId",) for t in templates)

        completion = await broker.complete("everything", templates[0].uri_template, "resourceId", "1", None)
        assert completion.values and all(v.startswith("1") for v in completion.values)

        document = await broker.read("everything", listed[0].uri)
        assert document.contents[0].text

        blob = await broker.read(
            "everything", uri_template="demo://resource/dynamic/blob/{resourceId}", arguments={"resourceId": "1"}
        )
        assert blob.uri == "demo://resource/dynamic/blob/1"
        (content,) = blob.contents
        direct_bytes = base64.b64decode(getattr(direct_blob.contents[0], "blob", ""))
        through_bytes = base64.b64decode(content.blob or "", validate=True)
        # The reference server stamps each blob with the time it was made; everything before the stamp matches.
        assert through_bytes.startswith(b"Resource 1")
        assert through_bytes.split(b" at ")[0] == direct_bytes.split(b" at ")[0]
        assert content.mime_type == direct_blob.contents[0].mime_type


def test_node_is_available_for_the_reference_servers() -> None:
    assert shutil.which("node"), "the reference MCP servers need Node.js on PATH"
