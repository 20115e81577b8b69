"""Server processes and protocol faults through the real hub (docs/security.md C1–C5, C9–C13, C17, C18, C23), and
every protocol revision the SDK negotiates."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import anyio.lowlevel
import mcp_types as types
import pytest
from mcp import MCPError
from support.folders import folder_candidate
from support.hub_harness import configs, running_hub
from support.processes import alive
from support.records import recorded_roots, records
from support.servers import python_server

from host_bridge.hub.config import load_servers
from host_bridge.hub.connection import SUPPORTED_VERSIONS
from host_bridge.hub.errors import ServerNotRunningError, UpstreamError
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.uris import canonical_path, path_to_uri

pytestmark = pytest.mark.anyio

QUICK = ConnectionSettings(
    initialize_timeout=30, request_timeout=5, backoff_initial=0.05, backoff_max=0.2, max_crashes=5, crash_window=180
)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_a_server_pinned_to_each_handshake_revision_connects_and_receives_its_roots(
    tmp_path: Path, version: str
) -> None:
    record = tmp_path / "roots.jsonl"
    folder = tmp_path / "proj"
    folder.mkdir()
    servers = configs({"rec": python_server("roots_recorder", "--record", str(record), "--pin", version)})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(folder)], connection_settings=QUICK) as h:
        await h.wait_running("rec")
        assert h.hub.connection("rec").protocol_version == version
        h.allow("rec", folder)
        expected = [path_to_uri(canonical_path(folder))]
        await h.recorder.wait_for(lambda: expected in recorded_roots(record), poll=0.05)
        assert all(uri in (expected[0],) for answer in recorded_roots(record) for uri in answer)


async def test_a_modern_server_receives_roots_through_input_required_rounds(tmp_path: Path) -> None:
    record = tmp_path / "roots.jsonl"
    folder = tmp_path / "proj"
    folder.mkdir()
    servers = configs({"rec": python_server("roots_recorder", "--record", str(record))})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(folder)], connection_settings=QUICK) as h:
        await h.wait_running("rec")
        assert h.hub.connection("rec").protocol_version == "2026-07-28"
        h.allow("rec", folder)
        await h.recorder.wait_for(lambda: bool(h.registry.roots_for("rec")))
        result = await h.hub.broker.read("rec", "recorder://roots/latest")
        assert path_to_uri(canonical_path(folder)) in (result.contents[0].text or "")
        assert [path_to_uri(canonical_path(folder))] in recorded_roots(record)


@pytest.mark.requirement("C13")
async def test_an_unsupported_revision_fails_once_naming_both_versions_without_restarting(tmp_path: Path) -> None:
    servers = configs(
        {"old": python_server("resources_server", "--fault", "bad-version", "--answer-version", "2099-01-01")}
    )
    async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
        await h.recorder.wait_for(lambda: h.state("old") == "failed")
        error = h.hub.connection("old").last_error or ""
        assert "2099-01-01" in error and "2025-11-25" in error and "update the server" in error
        assert h.hub.connection("old").starts == 1
        h.hub.restart("old")
        await h.recorder.wait_for(lambda: h.hub.connection("old").starts == 2 and h.state("old") == "failed")


@pytest.mark.requirement("C1")
async def test_a_server_that_crashes_mid_read_fails_the_read_fast_and_is_restarted(tmp_path: Path) -> None:
    servers = configs({"c": python_server("resources_server", "--fault", "crash-on-read")})
    async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
        await h.wait_running("c")
        with anyio.fail_after(4), pytest.raises(UpstreamError) as caught:
            await h.hub.broker.read("c", "test://res/1")
        assert "c" in str(caught.value)
        await h.recorder.wait_for(lambda: h.hub.connection("c").starts == 2 and h.state("c") == "running")
        assert "exited" in (h.hub.connection("c").last_error or "") or "closed" in (
            h.hub.connection("c").last_error or ""
        )


@pytest.mark.requirement("C2")
async def test_a_crash_loop_stops_after_five_starts_with_a_reason_and_a_restart_revives_it(tmp_path: Path) -> None:
    servers = configs({"loop": python_server("resources_server", "--fault", "crash-at-start")})
    async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
        await h.recorder.wait_for(lambda: h.state("loop") == "failed")
        connection = h.hub.connection("loop")
        assert connection.starts == 5
        assert "crashed 5 times in 3 minutes" in (connection.last_error or "")
        assert "restart" in (connection.last_error or "")
        h.hub.restart("loop")
        await h.recorder.wait_for(lambda: connection.starts > 5)


@pytest.mark.requirement("C3")
async def test_a_server_that_never_answers_initialize_is_killed_and_counted_as_a_crash(tmp_path: Path) -> None:
    settings = ConnectionSettings(initialize_timeout=1, request_timeout=5, backoff_initial=30, backoff_max=30)
    servers = configs({"mute": python_server("resources_server", "--fault", "hang-initialize")})
    async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
        await h.recorder.wait_for(lambda: h.state("mute") == "restarting")
        assert "handshake within 1 s" in (h.hub.connection("mute").last_error or "")


@pytest.mark.requirement("C4")
async def test_a_read_that_never_answers_times_out_sends_cancelled_and_the_session_stays_usable(tmp_path: Path) -> None:
    record = tmp_path / "server.jsonl"
    settings = ConnectionSettings(initialize_timeout=30, request_timeout=1)
    servers = configs({"slow": python_server("resources_server", "--fault", "hang-read", "--record", str(record))})
    async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
        await h.wait_running("slow")
        with pytest.raises(UpstreamError, match="did not answer"):
            await h.hub.broker.read("slow", "test://res/1")
        await h.recorder.wait_for(lambda: any("cancelled" in r for r in records(record)), poll=0.05)
        page = await h.hub.broker.list_resources("slow")
        assert len(page.items) > 0
        assert h.state("slow") == "running"


@pytest.mark.requirement("C5")
async def test_late_duplicate_and_unknown_responses_are_ignored_and_the_session_stays_usable(tmp_path: Path) -> None:
    settings = ConnectionSettings(initialize_timeout=30, request_timeout=1)
    servers = configs({"late": python_server("raw_faults", "late-response")})
    async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
        await h.wait_running("late")
        with pytest.raises(UpstreamError):
            await h.hub.broker.read("late", "test://res/1")
        page = await h.hub.broker.list_resources("late")
        assert page.items
        assert h.state("late") == "running"


@pytest.mark.parametrize(
    ("mode", "row"),
    [
        pytest.param("garbage", "C11", id="garbage-C11", marks=pytest.mark.requirement("C11")),
        pytest.param("stdout-log", "C12", id="stdout-log-C12", marks=pytest.mark.requirement("C12")),
        pytest.param("badutf8", "C10", id="badutf8-C10", marks=pytest.mark.requirement("C10")),
    ],
)
async def test_malformed_output_is_skipped_and_the_next_message_is_processed(
    tmp_path: Path, mode: str, row: str
) -> None:
    servers = configs({"noisy": python_server("raw_faults", mode)})
    async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
        await h.wait_running("noisy")
        page = await h.hub.broker.list_resources("noisy")
        assert page.items, row
        assert h.hub.connection("noisy").starts == 1


@pytest.mark.requirement("C11")
async def test_more_malformed_messages_in_a_minute_than_the_budget_restart_the_connection_naming_why(
    tmp_path: Path,
) -> None:
    settings = ConnectionSettings(
        initialize_timeout=30, request_timeout=5, backoff_initial=0.05, backoff_max=0.2, malformed_budget=2
    )
    servers = configs({"noisy": python_server("raw_faults", "garbage")})
    async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
        noisy = h.hub.connection("noisy")
        await h.recorder.wait_for(lambda: noisy.starts >= 2)
        assert "sent more than 2 malformed messages in a minute" in (noisy.last_error or "")


@pytest.mark.requirement("C9")
async def test_an_endless_line_ends_that_connection_naming_the_server_and_the_cap_while_others_keep_working(
    tmp_path: Path,
) -> None:
    # C9: the stdio reader caps a line; the cap, not the request timeout (30 s here), ends the connection.
    settings = ConnectionSettings(
        initialize_timeout=30, request_timeout=30, backoff_initial=0.05, backoff_max=0.2, max_line_bytes=2**20
    )
    servers = configs({"long": python_server("raw_faults", "no-newline"), "ok": python_server("resources_server")})
    async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
        long = h.hub.connection("long")
        await h.recorder.wait_for(lambda: "longer than 1048576 bytes" in (long.last_error or ""), timeout=15)
        assert "'long'" in (long.last_error or "") and "the cap is 1048576 bytes" in (long.last_error or "")
        await h.wait_running("ok")
        page = await h.hub.broker.list_resources("ok")
        assert page.items
        assert h.hub.connection("ok").starts == 1


@pytest.mark.requirement("C9")
async def test_a_long_line_under_the_cap_is_read_whole(tmp_path: Path) -> None:
    settings = ConnectionSettings(initialize_timeout=30, request_timeout=10, max_line_bytes=2 * 2**20)
    servers = configs({"wide": python_server("raw_faults", "huge-line", "--mb", "1.5")})
    async with running_hub(tmp_path / "storage", servers, connection_settings=settings) as h:
        await h.wait_running("wide")
        (item,) = (await h.hub.broker.list_resources("wide")).items
        assert item.uri == "test://raw/huge"


@pytest.mark.requirement("C17")
async def test_a_server_spamming_roots_list_is_answered_from_the_registry_without_new_prompts(tmp_path: Path) -> None:
    record = tmp_path / "roots.jsonl"
    folder = tmp_path / "proj"
    folder.mkdir()
    servers = configs(
        {
            "spam": python_server(
                "roots_recorder", "--record", str(record), "--pin", "2025-11-25", "--spam-roots", "1000"
            )
        }
    )
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(folder)], connection_settings=QUICK) as h:
        await h.recorder.wait_for(lambda: any("spam" in r for r in records(record)), poll=0.05)
        (summary,) = [r for r in records(record) if "spam" in r]
        assert summary["answered"] == 1000 and summary["failed"] == 0
        assert h.policy.decisions_for(h.hub.connection("spam").config.identity) == {}
        assert h.hub.connection("spam").state.value == "running"


@pytest.mark.requirement("C18")
async def test_undeclared_server_requests_are_refused(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    servers = configs(
        {
            "ask": python_server(
                "roots_recorder", "--record", str(record), "--pin", "2025-11-25", "--undeclared-requests"
            )
        }
    )
    async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
        await h.recorder.wait_for(lambda: any("undeclared" in r for r in records(record)), poll=0.05)
        (answers,) = [r["undeclared"] for r in records(record) if "undeclared" in r]
        # The SDK answers known-but-undeclared methods with -32600 and unknown ones with -32601: both refuse.
        assert answers == {"sampling/createMessage": -32600, "elicitation/create": -32600, "foo/bar": -32601}
        assert h.state("ask") == "running"


@pytest.mark.requirement("C23")
async def test_stopping_a_server_leaves_no_process_of_its_group_behind(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    servers = configs(
        {"kids": python_server("resources_server", "--fault", "spawn-grandchild", "--record", str(record))}
    )
    async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
        await h.wait_running("kids")
        await h.recorder.wait_for(lambda: any("grandchild" in r for r in records(record)), poll=0.05)
    (pids,) = [r for r in records(record) if "grandchild" in r]
    try:
        for pid in (pids["grandchild"], pids["server"]):
            assert not alive(pid), f"process {pid} survived the stop"
    finally:
        for pid in (pids["grandchild"], pids["server"]):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.requirement("B8")
async def test_roots_list_changed_is_sent_only_to_the_server_whose_roots_changed(tmp_path: Path) -> None:
    rec_a, rec_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    folder = tmp_path / "proj"
    folder.mkdir()
    servers = configs(
        {
            "a": python_server("roots_recorder", "--record", str(rec_a), "--pin", "2025-11-25"),
            "b": python_server("roots_recorder", "--record", str(rec_b), "--pin", "2025-11-25"),
        }
    )
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(folder)], connection_settings=QUICK) as h:
        await h.wait_running("a", "b")
        await h.recorder.wait_for(lambda: len(records(rec_a)) >= 1 and len(records(rec_b)) >= 1, poll=0.05)
        h.allow("a", folder)
        await h.recorder.wait_for(lambda: any(r.get("trigger") == "list_changed" for r in records(rec_a)), poll=0.05)
        # b answers a request after the change: by then any notification sent to it has arrived.
        await h.hub.broker.read("b", "recorder://roots/latest")
        assert [r.get("trigger") for r in records(rec_b)] == ["initialized"]
        assert all(not r["roots"] for r in records(rec_b) if "roots" in r)


def test_every_handshake_and_modern_revision_is_supported() -> None:
    assert set(SUPPORTED_VERSIONS) >= {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}


async def test_mcp_errors_keep_their_code_through_the_sdk(tmp_path: Path) -> None:
    servers = configs({"r": python_server("resources_server", "--pin", "2025-11-25")})
    async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
        await h.wait_running("r")
        with pytest.raises(MCPError) as caught:
            await h.hub.client("r").session.read_resource("test://nope")
        assert caught.value.code == -32002
        assert isinstance(caught.value.error, types.ErrorData)


@pytest.mark.requirement("A18", "F5")
async def test_a_workspace_defined_server_waits_for_trust_and_a_distrusted_one_never_starts(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".vscode").mkdir(parents=True)
    entry = python_server("resources_server", "--pin", "2025-11-25")
    other = {**entry, "env": {"VARIANT": "b"}}
    (workspace / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {"repo-a": entry, "repo-b": other}}))
    servers = list(load_servers(None, [str(workspace)]).servers)
    assert all(s.workspace_defined for s in servers)
    async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
        assert h.state("repo-a") == "awaitingTrust" and h.state("repo-b") == "awaitingTrust"
        assert h.hub.connection("repo-a").starts == 0

        h.hub.trust("repo-a", True)
        h.hub.trust("repo-b", False)

        await h.wait_running("repo-a")
        assert h.state("repo-b") == "stopped"
        assert h.hub.connection("repo-b").starts == 0
        assert "did not trust" in (h.hub.connection("repo-b").last_error or "")


@pytest.mark.requirement("A18")
async def test_withdrawing_trust_from_a_running_workspace_server_stops_it_until_trusted_again(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    (workspace / ".vscode").mkdir(parents=True)
    entry = python_server("resources_server", "--pin", "2025-11-25")
    (workspace / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {"repo": entry}}))
    servers = list(load_servers(None, [str(workspace)]).servers)
    async with running_hub(tmp_path / "storage", servers, connection_settings=QUICK) as h:
        h.hub.trust("repo", True)
        await h.wait_running("repo")
        running = h.hub.connection("repo")

        h.hub.trust("repo", False)

        assert h.state("repo") == "stopped"
        assert "did not trust" in (h.hub.connection("repo").last_error or "")
        await h.recorder.wait_for(lambda: running.state.value == "stopped")
        with pytest.raises(ServerNotRunningError):
            h.hub.client("repo")
        h.hub.trust("repo", True)
        await h.wait_running("repo")
        assert h.hub.connection("repo") is not running


async def test_a_read_waiting_on_a_starting_server_goes_on_with_the_connection_that_replaced_it(tmp_path: Path) -> None:
    # A long initialize time-out: waiting on the replaced connection would outlast the test's bound.
    patient = ConnectionSettings(initialize_timeout=120, request_timeout=10, max_crashes=5, crash_window=180)
    hanging = configs({"res": python_server("resources_server", "--count", "2", "--fault", "hang-initialize")})
    working = configs({"res": python_server("resources_server", "--count", "2")})
    async with running_hub(tmp_path / "storage", hanging, connection_settings=patient) as h:
        assert h.state("res") == "starting"
        read: list[str] = []

        async def read_first() -> None:
            result = await h.hub.broker.read("res", "test://res/0")
            read.append(result.contents[0].text or "")

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(read_first)
                await anyio.lowlevel.checkpoint()
                await h.hub.configure(working)
        assert read and read[0] != ""
