"""The kept resource lists (``host_bridge.hub.resources.cache``) through the real hub and fixture servers.

``resources_server.py --record PATH`` writes ``{"list": cursor}`` for every ``resources/list`` page it is asked for,
so each test sees exactly when the hub asks the server and when it answers from memory.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.folders import folder_candidate
from support.hub_harness import Harness, configs, running_hub
from support.records import recorded
from support.servers import resources_server

from host_bridge.hub.errors import ServerNotRunningError, UnknownServerError
from host_bridge.hub.resources.models import ResourceItem, ResourceSettings

pytestmark = pytest.mark.anyio

WALK = [None, "10", "20"]
"""The pages asked for when 25 resources are listed in pages of 10 (the first page has no cursor)."""


def uris(count: int) -> list[str]:
    return [f"test://res/{i}" for i in range(count)]


def server(record: Path, *extra: str) -> dict[str, object]:
    return resources_server("--count", "25", "--page-size", "10", "--record", str(record), *extra)


async def walk(h: Harness, server: str | None = None, limit: int | None = None) -> tuple[list[ResourceItem], list[str]]:
    """Every page of a listing: its resources and warnings."""
    items: list[ResourceItem] = []
    warnings: list[str] = []
    cursor: str | None = None
    while True:
        page = await h.hub.broker.list_resources(server, cursor, limit=limit)
        items.extend(page.items)
        warnings.extend(page.warnings)
        cursor = page.next_cursor
        if cursor is None:
            return items, warnings


async def until_listed(h: Harness, record: Path, pages: list[str | None]) -> None:
    await h.recorder.wait_for(lambda: recorded(record, "list") == pages, poll=0.05)


async def test_a_running_server_is_listed_ahead_and_every_listing_is_answered_from_that_list(tmp_path: Path) -> None:
    record = tmp_path / "res.jsonl"
    async with running_hub(tmp_path / "storage", configs({"res": server(record, "--list-changed")})) as h:
        await h.wait_running("res")
        await until_listed(h, record, WALK)

        for _ in range(2):
            assert [item.uri for item in await h.hub.broker.list_all("res")] == uris(25)
        whole = await h.hub.broker.list_resources(limit=1000)
        assert [item.uri for item in whole.items] == uris(25) and whole.next_cursor is None
        first = await h.hub.broker.list_resources("res", limit=7)
        assert [item.uri for item in first.items] == uris(7) and first.next_cursor is not None
        rest = await h.hub.broker.list_resources("res", first.next_cursor, limit=1000)
        assert [item.uri for item in rest.items] == uris(25)[7:] and rest.next_cursor is None
        # Without a limit, pages are the server's own, as they always were.
        page = await h.hub.broker.list_resources("res")
        assert [item.uri for item in page.items] == uris(10) and page.next_cursor is not None

        assert recorded(record, "list") == WALK, "a listing asked the server again"


async def test_list_changed_makes_the_next_listing_read_the_new_list(tmp_path: Path) -> None:
    record = tmp_path / "res.jsonl"
    async with running_hub(tmp_path / "storage", configs({"res": server(record, "--list-changed")})) as h:
        await h.wait_running("res")
        await until_listed(h, record, WALK)
        assert len(await h.hub.broker.list_all("res")) == 25

        await h.hub.broker.read("res", "test://control/grow")
        await h.recorder.wait_for(lambda: "res" in h.recorder.list_changes)

        assert [item.uri for item in await h.hub.broker.list_all("res")] == uris(26)
        assert recorded(record, "list") == [*WALK, None, "10", "20"]


async def test_a_server_that_does_not_say_when_its_list_changes_is_shown_its_kept_list_and_asked_behind_it(
    tmp_path: Path,
) -> None:
    record = tmp_path / "res.jsonl"
    settings = ResourceSettings(revalidate_after=0)
    # On a 2026-07-28 connection the SDK always declares listChanged; a handshake-era server declares what it is told.
    quiet = server(record, "--pin", "2025-11-25")
    async with running_hub(tmp_path / "storage", configs({"res": quiet}), resource_settings=settings) as h:
        await h.wait_running("res")
        await until_listed(h, record, WALK)

        # The list grows without a notification: the next listing gets the kept list at once, and asks behind it.
        await h.hub.broker.read("res", "test://control/grow-quietly")
        assert [item.uri for item in await h.hub.broker.list_all("res")] == uris(25)
        await h.recorder.wait_for(lambda: h.recorder.list_changes == ["res"])

        assert [item.uri for item in await h.hub.broker.list_all("res")] == uris(26)
        await until_listed(h, record, [*WALK, *WALK, *WALK])
        assert h.recorder.list_changes == ["res"], "a refresh that found nothing new was reported"


async def test_a_server_that_stops_leaves_every_listing_at_once_and_is_listed_afresh_when_it_runs_again(
    tmp_path: Path,
) -> None:
    record_a, record_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    servers = configs({"a": server(record_a, "--list-changed"), "b": server(record_b, "--list-changed")})
    async with running_hub(tmp_path / "storage", servers) as h:
        await h.wait_running("a", "b")
        await until_listed(h, record_a, WALK)
        await until_listed(h, record_b, WALK)
        first = await h.hub.broker.list_resources(limit=10)
        assert sorted({item.server for item in first.items}) == ["a", "b"]

        await h.hub.configure([servers[0]])

        rest = await h.hub.broker.list_resources(cursor=first.next_cursor, limit=1000)
        assert {item.server for item in rest.items} == {"a"}
        assert rest.warnings == (
            "unknown MCP server 'b'; see hostBridge/status for the configured ids (its resources are not listed)",
        )
        assert {item.server for item in (await h.hub.broker.list_resources(limit=1000)).items} == {"a"}
        with pytest.raises(UnknownServerError):
            await h.hub.broker.list_resources("b")

        # A restart drops the list at once; a listing begun before it ends there (even if the server runs again by
        # then), and the server is listed again once it runs.
        begun = await h.hub.broker.list_resources("a", limit=5)
        aggregated = await h.hub.broker.list_resources(limit=5)
        h.hub.restart("a")
        assert h.state("a") != "running"
        with pytest.raises(ServerNotRunningError):
            h.hub.client("a")
        stopped = await h.hub.broker.list_resources(cursor=aggregated.next_cursor, limit=1000)
        assert stopped.items == () and stopped.next_cursor is None
        assert len(stopped.warnings) == 1 and stopped.warnings[0].startswith("MCP server 'a' is ")
        after = await h.hub.broker.list_resources("a", begun.next_cursor, limit=5)
        assert after.items == () and after.next_cursor is None
        assert after.warnings == ("MCP server 'a' changed its list of resources while it was listed; list it again",)
        await h.wait_running("a")
        await until_listed(h, record_a, [*WALK, *WALK])
        assert [item.uri for item in await h.hub.broker.list_all("a")] == uris(25)


async def test_a_change_of_the_folders_shared_with_a_server_makes_the_next_listing_ask_it_again(
    tmp_path: Path,
) -> None:
    record = tmp_path / "res.jsonl"
    folder = tmp_path / "proj"
    folder.mkdir()
    servers = configs({"res": server(record, "--list-changed")})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(folder)]) as h:
        await h.wait_running("res")
        await until_listed(h, record, WALK)
        begun = await h.hub.broker.list_resources("res", limit=5)

        h.allow("res", folder)
        await h.recorder.wait_for(lambda: any(status.shared_roots for status in h.recorder.statuses))

        # Not asked at once (a consent change reaches many servers at the same time) …
        assert recorded(record, "list") == WALK
        # … but a listing that begins now never gets the list from before: it asks the server.
        assert len(await h.hub.broker.list_all("res")) == 25
        assert recorded(record, "list") == [*WALK, *WALK]
        # A listing begun before the change hands out nothing more of the list from before.
        rest = await h.hub.broker.list_resources("res", begun.next_cursor, limit=1000)
        assert rest.items == () and rest.next_cursor is None
        assert rest.warnings == ("MCP server 'res' changed its list of resources while it was listed; list it again",)


async def test_a_listing_under_way_hands_out_nothing_more_once_a_shared_folder_is_revoked(tmp_path: Path) -> None:
    record = tmp_path / "res.jsonl"
    folder = tmp_path / "proj"
    folder.mkdir()
    servers = configs({"res": server(record, "--list-changed")})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(folder)]) as h:
        await h.wait_running("res")
        h.allow("res", folder)
        await h.recorder.wait_for(lambda: bool(h.recorder.statuses) and bool(h.recorder.statuses[-1].shared_roots))
        begun = await h.hub.broker.list_resources("res", limit=5)
        aggregated = await h.hub.broker.list_resources(limit=5)
        assert len(begun.items) == len(aggregated.items) == 5

        h.forget("res", folder)
        await h.recorder.wait_for(lambda: not h.recorder.statuses[-1].shared_roots)

        rest = await h.hub.broker.list_resources("res", begun.next_cursor, limit=1000)
        assert rest.items == () and rest.next_cursor is None
        rest_of_all = await h.hub.broker.list_resources(cursor=aggregated.next_cursor, limit=1000)
        assert rest_of_all.items == () and rest_of_all.next_cursor is None
        assert rest_of_all.warnings == rest.warnings != ()
        listed_before = len(recorded(record, "list"))
        assert [item.uri for item in await h.hub.broker.list_all("res")] == uris(25)
        assert len(recorded(record, "list")) > listed_before, "the list from before the revocation was handed out"


@pytest.mark.requirement("H5")
async def test_a_list_without_end_is_kept_only_up_to_the_cap_and_the_server_is_asked_no_further(
    tmp_path: Path,
) -> None:
    record = tmp_path / "res.jsonl"
    endless = resources_server("--count", "100000000", "--page-size", "1000", "--record", str(record))
    settings = ResourceSettings(max_listed_resources=2500)
    async with running_hub(tmp_path / "storage", configs({"res": endless}), resource_settings=settings) as h:
        await h.wait_running("res")
        await until_listed(h, record, [None, "1000", "2000"])

        items, warnings = await walk(h, limit=10_000)

        assert [item.uri for item in items] == uris(2500)
        assert warnings == ["MCP server 'res' lists more than 2500 resources; only the first 2500 are listed"]
        assert recorded(record, "list") == [None, "1000", "2000"]


async def test_a_list_still_being_fetched_when_a_folder_is_revoked_is_not_read_by_any_later_listing(
    tmp_path: Path,
) -> None:
    record = tmp_path / "res.jsonl"
    folder = tmp_path / "proj"
    folder.mkdir()
    # Pages of 1 000 without end, kept up to a cap far away: the fetch is under way for as long as the test runs.
    endless = resources_server("--count", "100000000", "--page-size", "1000", "--record", str(record))
    settings = ResourceSettings(max_listed_resources=5_000_000, max_listed_bytes=2**31)
    servers = configs({"res": endless})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(folder)], resource_settings=settings) as h:
        await h.wait_running("res")
        h.allow("res", folder)
        await h.recorder.wait_for(lambda: bool(h.recorder.statuses) and bool(h.recorder.statuses[-1].shared_roots))
        before = await h.hub.broker.list_resources("res", limit=5)
        assert len(before.items) == 5
        walks = recorded(record, "list").count(None)

        h.forget("res", folder)
        await h.recorder.wait_for(lambda: not h.recorder.statuses[-1].shared_roots)

        after = await h.hub.broker.list_resources("res", limit=5)
        assert len(after.items) == 5
        assert recorded(record, "list").count(None) == walks + 1, "a listing read the list fetched before"
