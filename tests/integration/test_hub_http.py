"""Streamable HTTP servers through the real hub: the basics in both eras, docs/security.md D1–D4 and H2.

Fixture servers are real processes on 127.0.0.1 (``tests/servers/http_server.py``, ``tests/servers/http_stub.py``);
each test waits for ``{"listening": port}`` in the fixture's record file and always kills the process afterwards.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from support.hub_harness import Harness, PeakGrowth, configs, running_hub
from support.paths import SERVERS
from support.records import POLL, recorded

from host_bridge.hub.errors import ResourceNotFoundError, UpstreamError
from host_bridge.hub.settings import ConnectionSettings

pytestmark = pytest.mark.anyio

QUICK = ConnectionSettings(initialize_timeout=5, request_timeout=2, backoff_initial=0.05, backoff_max=0.2)
START_TIMEOUT = 20.0
"""Seconds a fixture process has to start listening (importing the SDK takes a while on a busy machine)."""
WAIT = 15.0
SERVER_ID = "web"
ITEM_TEMPLATE = "test://items/{category}/{id}"
SEARCH_TEMPLATE = "test://search{?q}"


def http_entry(port: int, path: str = "/mcp") -> dict[str, Any]:
    """Editor-style config entry for a streamable HTTP server on the loopback address."""
    return {"type": "http", "url": f"http://127.0.0.1:{port}{path}"}


@dataclass
class Fixture:
    """A fixture process and where it listens."""

    process: anyio.abc.Process
    port: int
    record: Path
    log: Path

    async def kill(self) -> None:
        """SIGKILL the process and reap it (idempotent)."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await self.process.wait()


@asynccontextmanager
async def fixture_process(script: str, record: Path, *args: str) -> AsyncIterator[Fixture]:
    """Run ``tests/servers/<script>.py --record RECORD ARGS…`` until it listens; always killed on exit."""
    log = record.with_suffix(".log")
    command = [sys.executable, str(SERVERS / f"{script}.py"), "--record", str(record), *args]
    with log.open("ab") as stderr:
        process = await anyio.open_process(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
    fixture = Fixture(process, 0, record, log)
    try:
        with anyio.fail_after(START_TIMEOUT):
            while not (ports := recorded(record, "listening")):
                if process.returncode is not None:
                    raise AssertionError(f"{script} exited with {process.returncode}:\n{log.read_text()}")
                await anyio.sleep(POLL)
        fixture.port = ports[-1]
        yield fixture
    finally:
        await fixture.kill()


async def wait_file(harness: Harness, condition: Any, timeout: float = WAIT) -> None:
    """Wait (bounded, polling) for a condition over record files and hub state."""
    await harness.recorder.wait_for(condition, timeout=timeout, poll=POLL)


@pytest.mark.parametrize("pin", [None, "2025-11-25"], ids=["modern", "handshake"])
async def test_an_http_server_connects_lists_and_reads_through_the_hub(tmp_path: Path, pin: str | None) -> None:
    record = tmp_path / "server.jsonl"
    args = ("--pin", pin) if pin else ()
    async with fixture_process("http_server", record, *args) as server:
        servers = configs({SERVER_ID: http_entry(server.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
            await h.wait_running(SERVER_ID)
            connection = h.hub.connection(SERVER_ID)
            assert connection.config.transport == "http"
            assert connection.protocol_version == (pin or "2026-07-28")
            assert recorded(record, "initialize") == ([pin] if pin else [])
            assert connection.server_info is not None and connection.server_info.name == "resources-server"

            items = await h.hub.broker.list_all(SERVER_ID)
            assert [item.uri for item in items] == [f"test://res/{i}" for i in range(25)]
            page = await h.hub.broker.list_resources()
            assert not page.warnings
            assert [item.uri for item in page.items] == [f"test://res/{i}" for i in range(10)]
            assert {item.server for item in page.items} == {SERVER_ID}
            templates = await h.hub.broker.list_templates(SERVER_ID)
            assert {t.uri_template for t in templates} == {ITEM_TEMPLATE, SEARCH_TEMPLATE}

            result = await h.hub.broker.read(SERVER_ID, "test://res/3")
            assert [(c.uri, c.text) for c in result.contents] == [("test://res/3", "content of res 3")]
            expanded = await h.hub.broker.read(
                SERVER_ID, uri_template=ITEM_TEMPLATE, arguments={"category": "books", "id": "b-100"}
            )
            assert expanded.contents[0].text == "expanded test://items/books/b-100"
            with pytest.raises(ResourceNotFoundError):
                await h.hub.broker.read(SERVER_ID, "test://res/999")

            await h.hub.broker.subscribe(SERVER_ID, "test://res/4")
            if pin:
                assert recorded(record, "subscribe") == ["test://res/4"]
            else:
                await wait_file(h, lambda: ["test://res/4"] in recorded(record, "listen"))
            assert connection.starts == 1
            assert h.state(SERVER_ID) == "running"


@pytest.mark.requirement("D1")
async def test_d1_a_dropped_sse_stream_fails_the_request_quickly_without_a_restart_storm(tmp_path: Path) -> None:
    record = tmp_path / "stub.jsonl"
    settings = ConnectionSettings(initialize_timeout=5, request_timeout=1, backoff_initial=0.05, backoff_max=0.2)
    async with fixture_process("http_stub", record) as stub:
        servers = configs({SERVER_ID: http_entry(stub.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
            await h.wait_running(SERVER_ID)
            connection = h.hub.connection(SERVER_ID)
            # The stub refused server/discover, so the hub fell back to the handshake.
            assert connection.protocol_version == "2025-11-25"
            assert recorded(record, "initialize") == ["2025-11-25"]

            started = anyio.current_time()
            with anyio.fail_after(settings.request_timeout + 2), pytest.raises(UpstreamError) as caught:
                await h.hub.broker.read(SERVER_ID, "test://res/1")
            assert anyio.current_time() - started <= settings.request_timeout
            assert SERVER_ID in caught.value.message
            # Besides the read, only the list of resources the hub fetched ahead once the server ran was dropped.
            assert [m for m in recorded(record, "dropped") if m != "resources/list"] == ["resources/read"]
            assert recorded(record, "dropped").count("resources/list") <= 1

            # At most one reconnect for the failed request, then the connection is steady again. Let the
            # connection task act on the failure first (a reconnect leaves "running" before anything blocks).
            await anyio.wait_all_tasks_blocked()
            await wait_file(
                h, lambda: h.state(SERVER_ID) == "running" and len(recorded(record, "initialize")) == connection.starts
            )
            assert connection.starts <= 2
            assert len(recorded(record, "initialize")) == connection.starts
            assert [m for m in recorded(record, "dropped") if m != "resources/list"] == ["resources/read"]


@pytest.mark.requirement("D2")
async def test_d2_a_redirect_to_another_origin_is_not_followed(tmp_path: Path) -> None:
    target_record = tmp_path / "target.jsonl"
    redirect_record = tmp_path / "redirector.jsonl"
    settings = ConnectionSettings(
        initialize_timeout=5, request_timeout=2, backoff_initial=0.05, backoff_max=0.2, max_crashes=2
    )
    async with fixture_process("http_stub", target_record) as target:
        target_url = f"http://127.0.0.1:{target.port}/mcp"
        async with fixture_process("http_stub", redirect_record, "--redirect-to", target_url) as redirector:
            servers = configs({SERVER_ID: http_entry(redirector.port)})
            async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
                await h.recorder.wait_for(lambda: h.state(SERVER_ID) == "failed", timeout=WAIT)
                connection = h.hub.connection(SERVER_ID)
                assert connection.starts == 2
                assert "not followed" in (connection.last_error or "")
                assert target_url in (connection.last_error or "")
                assert not [s for s in h.recorder.statuses if s.id == SERVER_ID and s.state.value == "running"]
                assert "initialize" in recorded(redirect_record, "redirected")
    # The other origin (another port on the same host) never saw a request.
    assert recorded(target_record, "request") == []


@pytest.mark.parametrize(
    "location",
    ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1:8080/mcp", "file:///etc/passwd"],
    ids=["metadata", "rfc1918", "file"],
)
@pytest.mark.requirement("D2")
async def test_d2_a_redirect_to_a_private_address_or_file_url_is_refused(tmp_path: Path, location: str) -> None:
    record = tmp_path / "redirector.jsonl"
    settings = ConnectionSettings(
        initialize_timeout=5, request_timeout=2, backoff_initial=0.05, backoff_max=0.2, max_crashes=2
    )
    async with fixture_process("http_stub", record, "--redirect-to", location) as redirector:
        servers = configs({SERVER_ID: http_entry(redirector.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
            with anyio.fail_after(WAIT):
                await h.recorder.wait_for(lambda: h.state(SERVER_ID) == "failed")
            connection = h.hub.connection(SERVER_ID)
            assert connection.starts == 2
            assert "not followed" in (connection.last_error or "")
            assert not [s for s in h.recorder.statuses if s.id == SERVER_ID and s.state.value == "running"]
            assert recorded(record, "redirected")


@pytest.mark.requirement("D3", "D5")
async def test_d3_a_lost_session_reconnects_with_a_new_initialize_and_resubscribes(tmp_path: Path) -> None:
    first_record = tmp_path / "first.jsonl"
    second_record = tmp_path / "second.jsonl"
    uri = "test://res/1"
    async with fixture_process("http_server", first_record, "--pin", "2025-11-25") as first:
        servers = configs({SERVER_ID: http_entry(first.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
            await h.wait_running(SERVER_ID)
            connection = h.hub.connection(SERVER_ID)
            assert connection.protocol_version == "2025-11-25"
            # A request first: the hub's on-connect resubscribe has run by then (a subscribe racing it is sent twice).
            assert (await h.hub.broker.read(SERVER_ID, "test://res/2")).contents[0].text == "content of res 2"
            # The list of resources the hub fetches once a server runs is complete: none of its requests is under way
            # when the server is killed (that would be a lost connection, not a lost session).
            assert len(await h.hub.broker.list_all(SERVER_ID)) > 0
            await h.hub.broker.subscribe(SERVER_ID, uri)
            assert recorded(first_record, "subscribe") == [uri]

            # The server restarts on the same port and no longer knows the session id.
            await first.kill()
            port = str(first.port)
            async with fixture_process("http_server", second_record, "--pin", "2025-11-25", "--port", port) as second:
                assert second.port == first.port
                assert recorded(second_record, "initialize") == []
                # The hub learns of the lost session from its next request (404 "Session not found").
                with pytest.raises(UpstreamError) as caught:
                    await h.hub.broker.read(SERVER_ID, "test://res/2")
                assert "session" in caught.value.message.lower()
                await wait_file(
                    h,
                    lambda: (
                        h.state(SERVER_ID) == "running"
                        and connection.starts == 2
                        and uri in recorded(second_record, "subscribe")
                        and h.hub.broker.subscriptions(SERVER_ID) == frozenset({uri})
                    ),
                )
                assert recorded(second_record, "initialize") == ["2025-11-25"]
                assert recorded(second_record, "subscribe") == [uri]
                assert h.hub.broker.subscriptions(SERVER_ID) == frozenset({uri})
                result = await h.hub.broker.read(SERVER_ID, "test://res/2")
                assert result.contents[0].text == "content of res 2"
                assert connection.starts == 2


@pytest.mark.requirement("D4", "H2")
async def test_d4_a_gzip_bomb_is_refused_at_the_decoded_size_cap_with_bounded_memory(tmp_path: Path) -> None:
    record = tmp_path / "stub.jsonl"
    settings = ConnectionSettings(initialize_timeout=5, request_timeout=10, max_body_bytes=2**20)
    async with fixture_process("http_stub", record, "--gzip-bomb", "64") as stub:
        servers = configs({SERVER_ID: http_entry(stub.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
            await h.wait_running(SERVER_ID)

            with PeakGrowth() as growth, pytest.raises(UpstreamError) as caught:
                await h.hub.broker.list_resources(SERVER_ID)

            assert recorded(record, "bomb") == ["resources/list"]
            assert "sent a response body of more than 1048576 bytes once decoded" in caught.value.message
            assert caught.value.message.startswith("MCP server 'web': ")
            assert growth.mib < 32, f"a 64 MB gzip bomb grew memory by {growth.mib:.0f} MiB"
            assert h.state(SERVER_ID) == "running"


@pytest.mark.requirement("H2")
async def test_h2_a_page_or_a_read_with_too_many_items_over_http_fails_clearly(tmp_path: Path) -> None:
    record = tmp_path / "server.jsonl"
    settings = ConnectionSettings(initialize_timeout=20, request_timeout=20, max_page_items=1000, max_read_contents=10)
    # 15 000 tiny items stay under the SDK's own cap on one server-sent event (1 MiB).
    async with fixture_process("http_server", record, "--many-items", "15000") as server:
        servers = configs({SERVER_ID: http_entry(server.port)})
        async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
            await h.wait_running(SERVER_ID)

            with pytest.raises(UpstreamError) as page:
                await h.hub.broker.list_resources(SERVER_ID)
            with pytest.raises(UpstreamError) as read:
                await h.hub.broker.read(SERVER_ID, "test://many/1")

            assert "its resources/list answer held 15000 resources in one page, over host_bridge's limit of 1000" in (
                page.value.message
            )
            assert "its resources/read answer held 15000 content items, over host_bridge's limit of 10 per read" in (
                read.value.message
            )
            assert (await h.hub.broker.read(SERVER_ID, "test://res/1")).contents[0].text == "content of res 1"
