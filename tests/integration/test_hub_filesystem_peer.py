"""The pinned reference server-filesystem, started with no directories, sees exactly the consented roots."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from support.folders import folder_candidate
from support.hub_harness import Harness, configs, running_hub
from support.servers import peer_server

from host_bridge.consent.policy import Decision
from host_bridge.hub.audit import read_audit
from host_bridge.uris import canonical_path, path_to_uri

pytestmark = pytest.mark.anyio

UPDATED = "Updated allowed directories from MCP roots: "


async def allowed_directories(client: Client) -> list[str]:
    result = await client.call_tool("list_allowed_directories", {})
    text = "".join(getattr(block, "text", "") for block in result.content)
    return [line.strip() for line in text.splitlines()[1:] if line.strip()]


def updates(harness: Harness, server_id: str) -> list[str]:
    return [line for line in harness.recorder.log_lines(server_id) if line.startswith(UPDATED)]


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "ws" / "first dir #1", tmp_path / "ws" / "second-é"
    first.mkdir(parents=True)
    second.mkdir()
    return first, second


@pytest.mark.requirement("A14", "B6")
async def test_server_filesystem_gets_the_consented_folder_gains_a_second_and_loses_a_revoked_one(
    tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, second = folders
    servers = configs({"fs": peer_server("server-filesystem")})
    candidates = [folder_candidate(first), folder_candidate(second)]
    async with running_hub(tmp_path / "storage", servers, candidates) as harness:
        await harness.wait_running("fs")
        assert await allowed_directories(harness.hub.client("fs")) == []

        harness.allow("fs", first)
        await harness.recorder.wait_for(lambda: updates(harness, "fs")[-1:] == [UPDATED + "1 valid directories"])
        assert await allowed_directories(harness.hub.client("fs")) == [canonical_path(first)]

        harness.allow("fs", second, Decision.ALLOW_SESSION)
        await harness.recorder.wait_for(lambda: updates(harness, "fs")[-1:] == [UPDATED + "2 valid directories"])
        assert sorted(await allowed_directories(harness.hub.client("fs"))) == sorted(
            [canonical_path(first), canonical_path(second)]
        )

        harness.forget("fs", first)
        await harness.recorder.wait_for(lambda: len(updates(harness, "fs")) == 3)
        assert updates(harness, "fs")[-1] == UPDATED + "1 valid directories"
        assert await allowed_directories(harness.hub.client("fs")) == [canonical_path(second)]
        status = harness.hub.statuses()[0]
        assert [r.uri for r in status.shared_roots] == [path_to_uri(canonical_path(second))]

    audited = [entry.roots for entry in read_audit(str(tmp_path / "storage")) if entry.server == "fs"]
    assert (path_to_uri(canonical_path(first)),) in audited
    assert audited[-1] == (path_to_uri(canonical_path(second)),)


@pytest.mark.requirement("B6")
async def test_revoking_the_last_folder_restarts_server_filesystem_so_it_forgets_it(
    tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, _ = folders
    servers = configs({"fs": peer_server("server-filesystem")})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(first)]) as harness:
        await harness.wait_running("fs")
        harness.allow("fs", first)
        await harness.recorder.wait_for(lambda: updates(harness, "fs")[-1:] == [UPDATED + "1 valid directories"])
        starts = harness.hub.connection("fs").starts

        harness.forget("fs", first)

        await harness.recorder.wait_for(
            lambda: harness.hub.connection("fs").starts > starts and harness.state("fs") == "running"
        )
        assert await allowed_directories(harness.hub.client("fs")) == []


@pytest.mark.requirement("B8")
async def test_a_folder_consented_for_one_server_is_never_seen_by_another(
    tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    first, second = folders
    entry_b = peer_server("server-filesystem")
    entry_b["env"] = {"FS_INSTANCE": "b"}
    servers = configs({"fs-a": peer_server("server-filesystem"), "fs-b": entry_b})
    candidates = [folder_candidate(first), folder_candidate(second)]
    async with running_hub(tmp_path / "storage", servers, candidates) as harness:
        await harness.wait_running("fs-a", "fs-b")
        harness.allow("fs-a", first)
        harness.allow("fs-b", second)
        await harness.recorder.wait_for(lambda: bool(updates(harness, "fs-a")) and bool(updates(harness, "fs-b")))
        assert await allowed_directories(harness.hub.client("fs-a")) == [canonical_path(first)]
        assert await allowed_directories(harness.hub.client("fs-b")) == [canonical_path(second)]

    for entry in read_audit(str(tmp_path / "storage")):
        if entry.server == "fs-b":
            assert path_to_uri(canonical_path(first)) not in entry.roots
