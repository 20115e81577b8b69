"""Smoke tests of the fixture MCP servers in ``tests/servers``: each starts over stdio and answers its basics.

The hub's integration tests rely on these servers; these tests pin down what the fixtures promise, driven by the
SDK client directly.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal, TextIO

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from support.paths import SERVERS
from support.records import Entry, records

pytestmark = [
    pytest.mark.anyio,
    # The fixtures exercise roots and resources/subscribe on purpose; both are deprecated as of 2026-07-28.
    pytest.mark.filterwarnings("ignore:The roots capability is deprecated:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*use Client.listen\\(\\):UserWarning"),
]


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[TextIO]:
    """The fixture server's stderr, captured in a file."""
    with (tmp_path / "stderr.log").open("w+") as file:
        yield file


@pytest.fixture
def record(tmp_path: Path) -> Path:
    """Where a fixture server records what it saw."""
    return tmp_path / "record.jsonl"


@asynccontextmanager
async def connect(
    errlog: TextIO, script: str, *args: str, mode: Literal["legacy", "auto"] = "legacy", **kwargs: Any
) -> AsyncGenerator[Client]:
    """A client connected to ``tests/servers/<script>`` over stdio."""
    params = StdioServerParameters(
        command=sys.executable, args=[str(SERVERS / script), *args], encoding_error_handler="replace"
    )
    async with Client(stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=10, **kwargs) as client:
        yield client


async def wait_for(path: Path, predicate: Callable[[list[Entry]], bool], timeout: float = 5.0) -> list[Entry]:
    """Poll the record file (written by another process) until ``predicate`` holds for its lines."""
    with anyio.fail_after(timeout):
        while not predicate(entries := records(path)):
            await anyio.sleep(0.02)
    return entries


def roots_answers(entries: list[Entry]) -> list[Entry]:
    """The recorded roots answers."""
    return [entry for entry in entries if "roots" in entry]


def roots_callback(folder: Path) -> Callable[..., Any]:
    """A ``list_roots_callback`` that shares ``folder``."""

    async def list_roots(ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root.model_validate({"uri": folder.as_uri(), "name": folder.name})])

    return list_roots


async def test_roots_recorder_records_the_roots_after_initialized_and_after_each_list_changed(
    tmp_path: Path, record: Path, errlog: TextIO
) -> None:
    async with connect(
        errlog, "roots_recorder.py", "--record", str(record), list_roots_callback=roots_callback(tmp_path)
    ) as client:
        first = await wait_for(record, lambda entries: len(roots_answers(entries)) == 1)
        await client.session.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
        entries = await wait_for(record, lambda entries: len(roots_answers(entries)) == 2)
        history = await client.read_resource("recorder://roots")

    assert first[0]["trigger"] == "initialized"
    assert [entry["trigger"] for entry in entries] == ["initialized", "list_changed"]
    assert entries[1]["roots"] == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]
    assert entries[1]["protocolVersion"] == "2025-11-25"
    content = history.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert json.loads(content.text) == entries
    errlog.seek(0)
    assert errlog.read().splitlines().count("roots: 1") == 2


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
async def test_roots_recorder_pinned_negotiates_its_version_even_for_an_auto_client(
    version: str, tmp_path: Path, record: Path, errlog: TextIO
) -> None:
    async with connect(
        errlog,
        "roots_recorder.py",
        "--record",
        str(record),
        "--pin",
        version,
        mode="auto",
        list_roots_callback=roots_callback(tmp_path),
    ) as client:
        entries = await wait_for(record, lambda entries: len(roots_answers(entries)) == 1)
        negotiated = client.protocol_version

    assert negotiated == version
    assert entries[0]["protocolVersion"] == version
    assert entries[0]["roots"] == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]


async def test_roots_recorder_in_the_2026_era_asks_for_roots_through_input_required(
    tmp_path: Path, record: Path, errlog: TextIO
) -> None:
    async with connect(
        errlog,
        "roots_recorder.py",
        "--record",
        str(record),
        mode="auto",
        list_roots_callback=roots_callback(tmp_path),
    ) as client:
        latest = await client.read_resource("recorder://roots/latest")
        version = client.protocol_version

    assert version == "2026-07-28"
    entries = records(record)
    assert [(entry["trigger"], entry["protocolVersion"]) for entry in entries] == [("input_required", version)]
    content = latest.contents[0]
    assert isinstance(content, types.TextResourceContents)
    assert json.loads(content.text) == entries[0]


async def test_roots_recorder_counts_spammed_roots_answers_and_the_codes_of_undeclared_requests(
    tmp_path: Path, record: Path, errlog: TextIO
) -> None:
    args = ("--record", str(record), "--spam-roots", "20", "--undeclared-requests")
    async with connect(errlog, "roots_recorder.py", *args, list_roots_callback=roots_callback(tmp_path)):
        entries = await wait_for(record, lambda entries: any("undeclared" in entry for entry in entries))

    assert {"spam": 20, "answered": 20, "failed": 0} in entries
    assert {"undeclared": {"sampling/createMessage": -32600, "elicitation/create": -32600, "foo/bar": -32601}} in (
        entries
    )


async def test_resources_server_pages_completes_reads_and_notifies_a_handshake_subscriber(errlog: TextIO) -> None:
    touched = anyio.Event()
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            seen.append(message.params.uri)
        if isinstance(message, types.ResourceListChangedNotification):
            touched.set()

    async with connect(
        errlog, "resources_server.py", "--count", "25", "--page-size", "10", message_handler=on_message
    ) as c:
        pages = [await c.list_resources()]
        while cursor := pages[-1].next_cursor:
            pages.append(await c.list_resources(cursor=cursor))
        templates = await c.list_resource_templates()
        ids = await c.complete(
            types.ResourceTemplateReference(uri="test://items/{category}/{id}"),
            {"name": "id", "value": "c-7"},
            {"category": "cars"},
        )
        text = await c.read_resource("test://res/7")
        blob = await c.read_resource("test://blob/3")
        item = await c.read_resource("test://items/cars/c-70")
        with pytest.raises(MCPError) as missing:
            await c.read_resource("test://res/25")
        await c.session.subscribe_resource("test://res/2")  # pyright: ignore[reportDeprecated]
        await c.read_resource("test://control/touch/2")
        with anyio.fail_after(5):
            await touched.wait()

    assert [len(page.resources) for page in pages] == [10, 10, 5]
    assert pages[2].resources[-1].name == "res-00024"
    assert [t.uri_template for t in templates.resource_templates] == [
        "test://items/{category}/{id}",
        "test://search{?q}",
    ]
    assert ids.completion.values == ["c-7", "c-70", "c-700"]
    assert text.contents[0] == types.TextResourceContents(
        uri="test://res/7", mime_type="text/plain", text="content of res 7"
    )
    assert blob.contents[0] == types.BlobResourceContents(
        uri="test://blob/3", mime_type="application/octet-stream", blob="AAEC"
    )
    assert isinstance(item.contents[0], types.TextResourceContents)
    assert item.contents[0].text == "expanded test://items/cars/c-70"
    assert (missing.value.code, missing.value.data) == (-32002, {"uri": "test://res/25"})
    assert seen == ["test://res/2"]


async def test_resources_server_delivers_touch_events_on_a_2026_listen_stream(errlog: TextIO) -> None:
    async with connect(errlog, "resources_server.py", mode="auto") as client:
        events: list[object] = []
        async with client.listen(resources_list_changed=True, resource_subscriptions=["test://res/4"]) as events_in:
            await client.read_resource("test://control/touch/4")
            with anyio.fail_after(5):
                async for event in events_in:
                    events.append(event)
                    if isinstance(event, ResourcesListChanged):
                        break
        version = client.protocol_version

    assert version == "2026-07-28"
    assert events == [ResourceUpdated(uri="test://res/4"), ResourcesListChanged()]


async def test_resources_server_crash_on_read_closes_the_connection(errlog: TextIO) -> None:
    async with connect(errlog, "resources_server.py", "--fault", "crash-on-read") as client:
        with pytest.raises(MCPError) as crashed:
            await client.read_resource("test://res/1")

    assert crashed.value.code == types.CONNECTION_CLOSED


async def test_resources_server_bad_version_fails_the_handshake_even_for_an_auto_client(errlog: TextIO) -> None:
    with pytest.raises(BaseExceptionGroup) as failed:
        async with connect(errlog, "resources_server.py", "--fault", "bad-version", mode="auto"):
            pass

    assert failed.group_contains(
        RuntimeError, match="Unsupported protocol version from the server: 2099-01-01", depth=2
    )


async def test_resources_server_without_resources_answers_method_not_found(errlog: TextIO) -> None:
    async with connect(errlog, "resources_server.py", "--fault", "no-resources") as client:
        capabilities = client.server_capabilities
        with pytest.raises(MCPError) as missing:
            await client.list_resources()

    assert capabilities.resources is None
    assert missing.value.code == types.METHOD_NOT_FOUND


async def test_resources_server_hang_read_records_the_clients_cancellation(record: Path, errlog: TextIO) -> None:
    async with connect(errlog, "resources_server.py", "--fault", "hang-read", "--record", str(record)) as client:
        with anyio.move_on_after(0.3):
            await client.read_resource("test://res/1")
        still_listing = await client.list_resources()
        entries = await wait_for(record, lambda entries: any("cancelled" in entry for entry in entries))

    reading = next(entry for entry in entries if "reading" in entry)
    cancelled = next(entry for entry in entries if "cancelled" in entry)
    assert reading["uri"] == "test://res/1"
    assert cancelled["cancelled"] == reading["reading"]
    assert len(still_listing.resources) == 10


async def test_raw_garbage_server_still_gets_its_correct_answers_through(errlog: TextIO) -> None:
    malformed: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            malformed.append(message)

    async with connect(errlog, "raw_faults.py", "garbage", message_handler=on_message) as client:
        listed = await client.list_resources()
        name = client.server_info.name if client.server_info else None

    assert name == "raw-faults-garbage"
    assert [resource.uri for resource in listed.resources] == ["test://raw/ok"]
    assert malformed


async def test_raw_badutf8_server_is_readable_with_the_replace_error_handler(errlog: TextIO) -> None:
    async with connect(errlog, "raw_faults.py", "badutf8") as client:
        listed = await client.list_resources()

    assert [resource.uri for resource in listed.resources] == ["test://raw/1"]


async def test_raw_huge_line_server_answers_resources_list_on_one_line_of_the_given_size(errlog: TextIO) -> None:
    async with connect(errlog, "raw_faults.py", "huge-line", "--mb", "1") as client:
        listed = await client.list_resources()

    assert len(listed.resources[0].description or "") == 1024 * 1024


async def test_raw_no_newline_server_never_finishes_a_message(errlog: TextIO) -> None:
    async with connect(errlog, "raw_faults.py", "no-newline") as client:
        with pytest.raises(MCPError) as timed_out:
            await client.session.send_request(
                types.ListResourcesRequest(), types.ListResourcesResult, request_read_timeout_seconds=0.3
            )

    assert timed_out.value.code == types.REQUEST_TIMEOUT


async def test_raw_late_response_server_answers_cancelled_reads_late_and_keeps_serving(errlog: TextIO) -> None:
    async with connect(errlog, "raw_faults.py", "late-response") as client:
        with anyio.move_on_after(0.3):
            await client.read_resource("test://raw/1")
        listed = await client.list_resources()

    errlog.seek(0)
    assert "answered cancelled read" in errlog.read()
    assert [resource.uri for resource in listed.resources] == ["test://raw/1"]


@pytest.mark.parametrize("mode", ["version", "stdout-log"])
async def test_raw_server_falls_back_from_discover_for_an_auto_client(mode: str, errlog: TextIO) -> None:
    args = ("version", "2024-11-05") if mode == "version" else ("stdout-log",)
    async with connect(errlog, "raw_faults.py", *args, mode="auto") as client:
        version = client.protocol_version
        listed = await client.list_resources()

    assert version == ("2024-11-05" if mode == "version" else "2025-11-25")
    assert [resource.uri for resource in listed.resources] == ["test://raw/1"]


async def test_raw_version_server_with_an_unknown_version_fails_the_handshake(errlog: TextIO) -> None:
    with pytest.raises(BaseExceptionGroup) as failed:
        async with connect(errlog, "raw_faults.py", "version", "2099-01-01"):
            pass

    assert failed.group_contains(RuntimeError, match="2099-01-01", depth=2)


async def test_sandbox_probe_reports_each_attempt_with_its_errno_and_logs_startup_failures(
    errlog: TextIO, tmp_path: Path
) -> None:
    present = tmp_path / "present.txt"
    present.write_text("x")
    missing = tmp_path / "missing.txt"
    async with connect(errlog, "sandbox_probe.py", "--startup-read", str(missing)) as client:
        result = await client.call_tool(
            "probe", {"read": [str(present), str(missing)], "write": [str(tmp_path / "w.txt")], "list": [str(tmp_path)]}
        )

    content = result.content[0]
    assert isinstance(content, types.TextContent)
    outcomes = [(o["op"], o["ok"], o["errno"]) for o in json.loads(content.text)]
    assert outcomes == [("read", True, None), ("read", False, 2), ("write", True, None), ("list", True, None)]
    errlog.seek(0)
    assert f"FileNotFoundError: [Errno 2] No such file or directory: '{missing}'" in errlog.read()
