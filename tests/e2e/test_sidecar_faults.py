"""The sidecar under editor-side faults (docs/security.md, section E): cancelled requests, an editor that dies
without closing the pipe, malformed frames, stray output. Also work-done progress of listings.

The fault tests drive ``python -m host_bridge serve`` as a bare subprocess with hand-written LSP framing
(:class:`support.raw_sidecar.RawSidecar`), so that malformed bytes can be sent and every byte the sidecar writes is
checked to be a well-formed frame.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from support.paths import SERVERS
from support.processes import alive, servers_of
from support.raw_sidecar import raw_sidecar
from support.records import record_line, recorded
from support.servers import resources_server
from support.sidecar import WAIT, BridgeClient, options, state_of

RESOURCES_SERVER = SERVERS / "resources_server.py"
REQUEST_CANCELLED = -32800


# Cancellation and progress, through pytest-lsp.


@pytest.mark.asyncio
@pytest.mark.requirement("E6")
async def test_cancelling_a_read_cancels_the_mcp_request_and_applies_no_late_result(
    client: BridgeClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"res": resources_server("--fault", "hang-read", "--record", str(record))}
    await client.start_session([], options(tmp_path, servers))
    await client.until(lambda: state_of(client.statuses, "res") == "running")

    reading = asyncio.ensure_future(
        client.protocol.send_request_async(
            "hostBridge/readResource", {"server": "res", "uri": "test://res/1"}, msg_id="read-1"
        )
    )
    parked = await record_line(record, lambda entry: "reading" in entry)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="read-1"))

    with pytest.raises(JsonRpcException) as cancelled:
        await asyncio.wait_for(reading, WAIT)
    assert cancelled.value.code == REQUEST_CANCELLED
    entry = await record_line(record, lambda entry: "cancelled" in entry)
    assert entry["cancelled"] == parked["reading"]

    page = await client.request("hostBridge/listResources", {"server": "res"})
    assert [item["uri"] for item in page["items"]][:2] == ["test://res/0", "test://res/1"]
    touched = await client.request("hostBridge/readResource", {"server": "res", "uri": "test://control/touch/1"})
    assert touched["uri"] == "test://control/touch/1"
    assert not [r for r in caplog.records if "read-1" in r.getMessage() and "unknown" in r.getMessage()]


@pytest.mark.asyncio
@pytest.mark.requirement("C7")
async def test_list_changes_and_updates_of_subscribed_resources_reach_the_editor(
    client: BridgeClient, tmp_path: Path
) -> None:
    servers = {"res": resources_server("--list-changed", "--pin", "2025-11-25")}
    await client.start_session([], options(tmp_path, servers))
    await client.until(lambda: state_of(client.statuses, "res") == "running")
    assert await client.request("hostBridge/subscribe", {"server": "res", "uri": "test://res/1"}) is None

    await client.request("hostBridge/readResource", {"server": "res", "uri": "test://control/touch/1"})

    await client.until(lambda: {"server": "res", "uri": "test://res/1"} in client.updates)
    await client.until(lambda: {"server": "res"} in client.list_changes)
    await client.request("hostBridge/unsubscribe", {"server": "res", "uri": "test://res/1"})
    seen = len(client.updates)
    await client.request("hostBridge/readResource", {"server": "res", "uri": "test://control/touch/1"})
    await client.until(lambda: client.list_changes.count({"server": "res"}) >= 2)
    assert len(client.updates) == seen


@pytest.mark.asyncio
async def test_a_listing_reports_work_done_progress_under_the_editors_token(
    client: BridgeClient, tmp_path: Path
) -> None:
    servers = {"a": resources_server("--count", "30", "--page-size", "20"), "b": resources_server("--count", "5")}
    capabilities = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))
    await client.initialize_session(
        types.InitializeParams(capabilities=capabilities, initialization_options=options(tmp_path, servers))
    )
    await client.until(lambda: state_of(client.statuses, "a") == state_of(client.statuses, "b") == "running")
    client.progress_reports["listing-1"] = []

    page = await client.request("hostBridge/listResources", {"workDoneToken": "listing-1"})

    reports = client.progress_reports["listing-1"]
    assert isinstance(reports[0], types.WorkDoneProgressBegin) and reports[0].title == "Listing MCP resources"
    assert any(isinstance(r, types.WorkDoneProgressReport) and r.message == "asking 2 MCP servers" for r in reports)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert reports[-1].message == "25 resources; more to come"
    assert len(page["items"]) == 25 and page["nextCursor"]

    client.progress_reports["listing-2"] = []
    last = await client.request(
        "hostBridge/listResources", {"cursor": page["nextCursor"], "workDoneToken": "listing-2"}
    )
    assert len(last["items"]) == 10 and "nextCursor" not in last
    assert [type(r) for r in client.progress_reports["listing-2"]] == [
        types.WorkDoneProgressBegin,
        types.WorkDoneProgressReport,
        types.WorkDoneProgressEnd,
    ]
    end = client.progress_reports["listing-2"][-1]
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message == "10 resources"

    unsolicited = await client.request("hostBridge/listResources", {"server": "b"})
    assert len(unsolicited["items"]) == 5
    assert set(client.progress_reports) == {"listing-1", "listing-2"}


@pytest.mark.asyncio
async def test_a_listing_comes_from_the_sidecars_memory_in_as_few_answers_as_the_editor_asks(
    client: BridgeClient, tmp_path: Path
) -> None:
    record = tmp_path / "res.jsonl"
    listed = resources_server("--count", "250", "--page-size", "10", "--list-changed", "--record", str(record))
    servers = {"res": listed}
    await client.start_session([], options(tmp_path, servers))
    await client.until(lambda: state_of(client.statuses, "res") == "running")
    # The sidecar lists a server as soon as it runs.
    await record_line(record, lambda entry: entry.get("list") == "240")

    first = await client.request("hostBridge/listResources", {"limit": 100})
    rest = await client.request("hostBridge/listResources", {"cursor": first["nextCursor"], "limit": 10_000})

    assert [item["uri"] for item in first["items"] + rest["items"]] == [f"test://res/{i}" for i in range(250)]
    assert len(first["items"]) == 100 and "nextCursor" not in rest
    assert len(recorded(record, "list")) == 25, "the sidecar asked the server again"

    await client.request("hostBridge/readResource", {"server": "res", "uri": "test://control/grow"})
    await client.until(lambda: {"server": "res"} in client.list_changes)
    # The list is fetched again; a listing reads it as it comes, and never the list from before.
    again: list[dict[str, Any]] = []
    page: dict[str, Any] = {}
    while page == {} or "nextCursor" in page:
        params = {"server": "res", "limit": 10_000} | ({"cursor": page["nextCursor"]} if page else {})
        page = await client.request("hostBridge/listResources", params)
        again.extend(page["items"])
    assert [item["uri"] for item in again] == [f"test://res/{i}" for i in range(251)]


# Editor-side faults, over raw stdio.


@pytest.mark.asyncio
@pytest.mark.requirement("E2")
async def test_e2_the_sidecar_exits_when_the_editor_process_dies_without_closing_the_pipe(tmp_path: Path) -> None:
    editor = await asyncio.create_subprocess_exec("sleep", "60")
    async with raw_sidecar() as sidecar:
        await sidecar.handshake(tmp_path, {"res": resources_server()}, process_id=editor.pid)
        await sidecar.until(lambda: state_of(sidecar.statuses(), "res") == "running")
        mcp_children = servers_of(sidecar.pid)
        assert mcp_children, "the fixture server runs as a child of the sidecar"

        editor.send_signal(signal.SIGKILL)
        await editor.wait()
        returncode = await sidecar.wait_exit(5)

        assert returncode == 0
        assert not [pid for pid in mcp_children if alive(pid)]
        assert any("the editor (process" in line for line in sidecar.logs())


@pytest.mark.asyncio
@pytest.mark.requirement("E3")
async def test_e3_malformed_frames_are_answered_or_skipped_and_the_sidecar_keeps_answering(tmp_path: Path) -> None:
    async with raw_sidecar() as sidecar:
        await sidecar.handshake(tmp_path, {})

        sidecar.write(b"Content-Length: 9\r\n\r\nnot json!")
        parse_error = await sidecar.response(None)
        assert parse_error["error"]["code"] == -32700
        assert "result" in await sidecar.request("hostBridge/status", {})

        sidecar.send({"jsonrpc": "1.0", "id": 41, "method": "hostBridge/status"})
        assert (await sidecar.response(41))["error"]["code"] == -32600
        sidecar.write(b"Content-Length: 9\r\n\r\n[1, 2, 3]")
        await sidecar.until(lambda: len(sidecar.responses(None)) == 2)
        assert (await sidecar.request("hostBridge/status", [1]))["error"]["code"] == -32602
        mistyped = await sidecar.request("workspace/executeCommand", {"command": 5})
        assert mistyped["error"]["code"] in (-32602, -32603), "pygls alone would drop it and leave the editor waiting"

        garbage = [
            b'Content-Length: abc\r\n\r\n{"jsonrpc": "2.0", "id": 97, "method": "shutdown"}',
            b'Content-Length: 5\r\nContent-Length: 6\r\n\r\n{"jsonrpc": "2.0", "id": 98, "method": "shutdown"}',
            b"\x00\xff\xfe garbage without any header\r\n\r\n",
            b"X" * 20_000,
            b"Content-Length: -4\r\n\r\n",
        ]
        for chunk in garbage:
            sidecar.write(chunk)
            answer = await sidecar.request("hostBridge/status", {})
            assert "result" in answer, (chunk[:40], answer)
        assert not sidecar.responses(97) and not sidecar.responses(98)
        assert b"skipped" in sidecar.stderr

        shutdown = await sidecar.request("shutdown")
        assert "result" in shutdown
        assert (await sidecar.request("hostBridge/status", {}))["error"]["code"] == -32600
        sidecar.notify("exit", None)
        assert await sidecar.wait_exit(10) == 0


@pytest.mark.asyncio
@pytest.mark.requirement("E3")
async def test_e3_a_huge_content_length_ends_the_connection_with_a_logged_error_without_allocating(
    tmp_path: Path,
) -> None:
    """An announced 1 TB body is refused before any of it is buffered: the stream cannot be trusted to be in step
    after it, so the sidecar logs an error, stops its MCP servers and exits 1 (it does not answer later requests)."""
    async with raw_sidecar() as sidecar:
        await sidecar.handshake(tmp_path, {"res": resources_server()})
        await sidecar.until(lambda: state_of(sidecar.statuses(), "res") == "running")
        mcp_children = servers_of(sidecar.pid)

        sidecar.write(b"Content-Length: %d\r\n\r\n{" % 10**12)
        sidecar.send({"jsonrpc": "2.0", "id": 77, "method": "hostBridge/status"})
        returncode = await sidecar.wait_exit(10)

        assert returncode == 1
        assert any("1000000000000 bytes" in line for line in sidecar.logs())
        assert b"1000000000000 bytes" in sidecar.stderr
        assert not sidecar.responses(77)
        assert not [pid for pid in mcp_children if alive(pid)]


NOISY_SERVER = """
import os, runpy, sys, threading, time
noise = b"Content-Length: 2\\r\\n\\r\\n{}" + b"\\xff\\xfe\\x1b[31m binary noise\\n" + b"y" * 100_000 + b"\\n"
os.write(2, noise)
def chatter():
    while True:
        os.write(2, b"Content-Length: 9\\r\\n\\r\\nnot json!\\n")
        time.sleep(0.01)
threading.Thread(target=chatter, daemon=True).start()
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""

STRAY_OUTPUT = """
import os, sys, threading, time
def stray():
    # Wait until the sidecar owns stdout (host_bridge.hosts.lsp.server.run_stdio), then scribble on it.
    while sys.stdout is not sys.stderr:
        time.sleep(0.005)
    for _ in range(20):
        print("stray print from inside the sidecar")
        os.write(1, b"Content-Length: 3\\r\\n\\r\\nraw write to fd 1\\n")
        time.sleep(0.01)
threading.Thread(target=stray, daemon=True).start()
"""


@pytest.mark.asyncio
@pytest.mark.requirement("E4")
async def test_e4_stray_output_never_reaches_the_editor_stream(tmp_path: Path) -> None:
    noisy = tmp_path / "noisy.py"
    noisy.write_text(NOISY_SERVER)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(STRAY_OUTPUT))
    pythonpath = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    servers = {"noisy": {"type": "stdio", "command": sys.executable, "args": [str(noisy), str(RESOURCES_SERVER)]}}

    async with raw_sidecar(env={"PYTHONPATH": pythonpath}) as sidecar:
        await sidecar.handshake(tmp_path, servers)
        await sidecar.until(lambda: state_of(sidecar.statuses(), "noisy") == "running")
        await sidecar.until(lambda: len([line for line in sidecar.logs() if "not json!" in line]) >= 10)
        page = await sidecar.request("hostBridge/listResources", {"server": "noisy"})
        assert len(page["result"]["items"]) == 10
        await sidecar.until(lambda: sidecar.stderr.count(b"stray print from inside the sidecar") == 20)
        assert sidecar.stderr.count(b"raw write to fd 1") == 20
    # close() has parsed every byte of stdout as frames: the noise and the stray writes went to stderr.
    assert any(line.startswith("[noisy] ") and "binary noise" in line for line in sidecar.logs())
    assert logging.getLogger("host_bridge").level in (logging.NOTSET, logging.WARNING, logging.DEBUG, logging.INFO)
