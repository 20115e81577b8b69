"""A hostile repository opened in the editor (docs/security.md, section F, and A18): whatever it holds, the real
sidecar keeps answering (``hostBridge/status`` within a second throughout; on a loaded machine, about as fast as the
same start on a harmless folder and as a status once the attack is over, both measured in the same run), the user's own
server starts, each bad file is one clear problem, no git process is left behind, and nothing in it grants consent.

Assertions here compare short values (a state, a bounded ``reprlib`` rendering): a regression that let a 100 000 deep
structure through must fail the test with a message, not crash pytest rendering the structure."""

from __future__ import annotations

import asyncio
import json
import os
import reprlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types
from support.folders import folder_uri
from support.records import recorded_roots, until_recorded
from support.servers import roots_recorder
from support.sidecar import WAIT, BridgeClient, another_sidecar, options

from host_bridge.hosts.lsp import messages
from host_bridge.hub.config import load_servers
from host_bridge.uris import canonical_path

STATUS_WITHIN = 1.0
"""Seconds every ``hostBridge/status`` may take while the attack runs, on an idle machine (the bound grows with the
machine's load, measured in the same run: see :func:`status_answers_quickly`)."""
SLOWER = 20
"""How many times a settled status (measured in the same run, once the attack is over) a status during it may take."""
STARTUP_SLOWER = 3
"""How many times the slowest status of the same start on a harmless folder (in the same run) one may take."""
EARLY = messages.STATUS.early.within if messages.STATUS.early is not None else 0.0
"""Seconds a status may wait by design for the workspace to be applied at start (then it answers with what is known)."""
BRIEF = reprlib.Repr()
BRIEF.maxlevel, BRIEF.maxstring, BRIEF.maxother, BRIEF.maxlist, BRIEF.maxdict = 3, 80, 80, 6, 6

Attack = Callable[[Path], None]


def mcp_json_to_our_own_input(folder: Path) -> None:
    (folder / ".vscode").mkdir()
    (folder / ".vscode" / "mcp.json").symlink_to("/proc/self/fd/0")


def env_file_to_our_own_input(folder: Path) -> None:
    (folder / "secrets.env").symlink_to("/proc/self/fd/0")
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "true", "envFile": "secrets.env"}}}))


def env_file_not_utf8(folder: Path) -> None:
    (folder / "bad.env").write_bytes(b"TOKEN=\xff\n")
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "true", "envFile": "bad.env"}}}))


def mcp_json_nested_100_000_deep(folder: Path) -> None:
    (folder / ".vscode").mkdir()
    (folder / ".vscode" / "mcp.json").write_text('{"servers": ' + "[" * 100_000 + "]" * 100_000 + "}")


def mcp_json_a_fifo(folder: Path) -> None:
    (folder / ".vscode").mkdir()
    os.mkfifo(folder / ".vscode" / "mcp.json")


def workspace_globs_built_to_backtrack(folder: Path) -> None:
    """An invalid glob (it killed the core) and one a backtracking matcher takes forever on (it pinned a CPU)."""
    globs = ["[z-a]", "**/" * 30 + "b", "libs/*"]
    (folder / "package.json").write_text(json.dumps({"name": "root", "workspaces": globs}))
    for member in (folder / "libs" / "m1", folder.joinpath(*["a"] * 6, "c")):
        member.mkdir(parents=True)
        (member / "package.json").write_text("{}")


def pom_xml_of_120_kb(folder: Path) -> None:
    (folder / "pom.xml").write_text("<project>" + '<a x="1">' * 13_000)
    (folder / "sub").mkdir()
    (folder / "sub" / "pom.xml").write_text("<!--" * 30_000)


def git_exclude_a_fifo(folder: Path) -> None:
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "app").mkdir()
    (folder / "app" / "package.json").write_text('{"name": "app"}')
    exclude = folder / ".git" / "info" / "exclude"
    exclude.unlink(missing_ok=True)
    os.mkfifo(exclude)


ATTACKS: dict[str, Attack] = {
    "mcp.json → /proc/self/fd/0": mcp_json_to_our_own_input,
    "envFile → /proc/self/fd/0": env_file_to_our_own_input,
    "envFile not UTF-8": env_file_not_utf8,
    "mcp.json nested 100 000 deep": mcp_json_nested_100_000_deep,
    "mcp.json a FIFO": mcp_json_a_fifo,
    "workspace globs built to backtrack": workspace_globs_built_to_backtrack,
    "120 KB pom.xml": pom_xml_of_120_kb,
    "FIFO in .git/info/exclude": git_exclude_a_fifo,
}


def git_children(pid: int) -> list[int]:
    """git processes whose parent is ``pid`` (or were, before they were orphaned into the sidecar's group)."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{entry}/comm", "rb") as comm:
                name = comm.read().strip()
        except OSError:
            continue
        if name == b"git" and fields[0] != b"Z" and int(fields[1]) == pid:
            found.append(int(entry))
    return found


def brief(value: object) -> str:
    """A short rendering of ``value``, however big or deep."""
    return BRIEF.repr(value)


async def status_times(client: BridgeClient, until: Callable[[], bool]) -> list[float]:
    """Ask ``hostBridge/status`` again and again until ``until()`` holds (a frozen sidecar fails the test after
    ``WAIT``); how long each answer took."""
    took: list[float] = []
    async with asyncio.timeout(WAIT):
        while True:
            started = time.perf_counter()
            await client.request("hostBridge/status")
            took.append(time.perf_counter() - started)
            if until():
                return took
            await asyncio.sleep(0.1)


async def status_answers_quickly(client: BridgeClient, until: Callable[[], bool], tmp_path: Path) -> int:
    """:func:`status_times`, each answer within the bound measured in the same run: ``STATUS_WITHIN`` or ``SLOWER``
    times the median status once settled, plus the designed ``EARLY`` wait; past that, within ``STARTUP_SLOWER`` times
    the slowest status of the same start on a harmless folder, measured then (a loaded machine slows every start). How
    many were asked."""
    took = await status_times(client, until)
    settled: list[float] = []
    for _ in range(5):
        settled += await status_times(client, lambda: True)
    slowest = max(took)
    bound = EARLY + max(STATUS_WITHIN, SLOWER * statistics.median(settled))
    if slowest >= bound:
        harmless = await harmless_start(tmp_path)
        bound = max(bound, EARLY + STARTUP_SLOWER * max(harmless))
        took_then = f"settled {brief(settled)}; harmless start {brief(harmless)}"
        assert slowest < bound, f"a status took {slowest:.3f} s during the attack; {took_then}"
    return len(took)


async def harmless_start(tmp_path: Path) -> list[float]:
    """The statuses of a sidecar started like the attacked one (same settings, the same server) on an empty folder,
    until its server fetched its roots: what starting costs on this machine now."""
    own = Path(tempfile.mkdtemp(prefix="harmless-", dir=tmp_path))
    folder = own / "folder"
    folder.mkdir()
    record = own / "roots.jsonl"
    settings = options(
        own,
        {"mine": roots_recorder(record)},
        readWorkspaceConfig=True,
        detection={"gitTimeout": 1},
    )
    async with another_sidecar() as harmless:
        await harmless.start_session([folder], settings)
        return await status_times(harmless, lambda: bool(recorded_roots(record) or record.exists()))


@pytest.mark.asyncio
@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
@pytest.mark.requirement("F1", "F2", "F3")
async def test_a_hostile_repository_never_stops_the_sidecar_nor_the_users_own_server(
    client: BridgeClient, tmp_path: Path, attack: Attack
) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    attack(repository)
    record = tmp_path / "roots.jsonl"
    mine = {"mine": roots_recorder(record)}
    settings = options(tmp_path, mine, readWorkspaceConfig=True, detection={"gitTimeout": 1})

    await client.start_session([repository], settings)
    asked = await status_answers_quickly(client, lambda: bool(recorded_roots(record) or record.exists()), tmp_path)

    assert asked >= 1
    status = await client.request("hostBridge/status")
    mine_states = brief([s["state"] for s in status["servers"] if s["id"] == "mine"])
    assert mine_states == brief(["running"])
    server = client._server  # pyright: ignore[reportPrivateUsage]
    assert server is not None and server.returncode is None
    await status_answers_quickly(client, lambda: not git_children(server.pid), tmp_path)


@pytest.mark.asyncio
@pytest.mark.parametrize("attack", [mcp_json_to_our_own_input, env_file_not_utf8, mcp_json_nested_100_000_deep])
@pytest.mark.requirement("F1")
async def test_a_hostile_config_file_is_one_problem_shown_to_the_user_naming_the_file(
    client: BridgeClient, tmp_path: Path, attack: Attack
) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    attack(repository)

    await client.start_session([repository], options(tmp_path, readWorkspaceConfig=True))

    await client.until(lambda: any("could not be used" in m.message for m in client.messages))
    (shown,) = [m.message for m in client.messages if "could not be used" in m.message]
    assert str(repository) in shown, brief(shown)
    assert any(reason in shown for reason in ("/proc", "not valid UTF-8", "nested more than 64 levels")), brief(shown)


@pytest.mark.asyncio
@pytest.mark.requirement("A18")
async def test_consent_and_settings_a_repository_ships_for_itself_are_ignored_and_the_user_is_asked(
    client: BridgeClient, tmp_path: Path
) -> None:
    """The repository holds consent files in host_bridge's own format allowing itself for the user's server, and
    ``hostBridge`` settings naming a server of its own: the user is still asked, nothing is shared without an answer,
    and the repository's settings start nothing."""
    repository = tmp_path / "repo"
    (repository / ".vscode").mkdir(parents=True)
    record = tmp_path / "roots.jsonl"
    mine = roots_recorder(record)
    (identity,) = [server.identity for server in load_servers({"mine": mine}, []).servers]
    allow_itself = {
        "source": identity.source,
        "serverId": identity.server_id,
        "fingerprint": identity.fingerprint,
        "path": canonical_path(repository),
        "decision": "allow",
        "updated": "2025-01-01T00:00:00Z",
    }
    claim = json.dumps({"version": 2, "roots": [allow_itself], "trust": []})
    for place in ("consent.json", ".vscode/consent.json", ".host_bridge/consent.json"):
        (repository / place).parent.mkdir(exist_ok=True)
        (repository / place).write_text(claim)
    started = tmp_path / "started"
    theirs = {"command": sys.executable, "args": ["-c", f"open({str(started)!r}, 'w')"]}
    settings = {"hostBridge.servers": {"theirs": theirs}, "hostBridge.readWorkspaceConfig": True}
    (repository / ".vscode" / "settings.json").write_text(json.dumps(settings))
    client.answer_consent = lambda params: {"decisions": []}

    await client.start_session(
        [repository], options(tmp_path, {"mine": mine}, readWorkspaceConfig=True), consent_ui=True
    )

    await client.until(lambda: len(client.asks) == 1)
    assert [r["uri"] for r in client.asks[0]["roots"]] == [folder_uri(repository)], "the user is asked all the same"
    await until_recorded(record, bool)
    status = await client.status()
    assert [(s["id"], s["sharedRoots"]) for s in status["servers"]] == [("mine", [])]
    assert all(answer == [] for answer in recorded_roots(record))
    assert not started.exists(), "nothing named by the repository's settings ran"


@pytest.mark.asyncio
@pytest.mark.requirement("F6")
async def test_hundreds_of_repository_servers_give_one_batched_bounded_trust_prompt(
    client: BridgeClient, tmp_path: Path
) -> None:
    """F6: 200 servers in one .mcp.json: one trust prompt naming the batch (at most 64), a problem for the rest."""
    repository = tmp_path / "repo"
    repository.mkdir()
    servers = {f"s{n:03}": {"command": "true", "args": [str(n)]} for n in range(200)}
    (repository / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    client.answer_consent = lambda params: {"decisions": []}

    await client.start_session([repository], options(tmp_path, readWorkspaceConfig=True), consent_ui=True)

    await client.until(lambda: len(client.asks) >= 1)
    await status_answers_quickly(client, lambda: True, tmp_path)
    (ask,) = client.asks
    assert ask["trustRequired"] is True
    assert [ask["server"]["id"], *(ref["id"] for ref in ask["batch"])] == [f"s{n:03}" for n in range(64)]
    assert any("defines 200 servers; only the first 64 are used" in m.message for m in client.messages)
    status = await client.request("hostBridge/status")
    assert brief(sorted({str(s["state"]) for s in status["servers"]})) == brief(["awaitingTrust"])


@pytest.mark.asyncio
@pytest.mark.requirement("E3")
async def test_a_request_without_params_and_a_second_initialize_get_clear_answers(
    client: BridgeClient, tmp_path: Path
) -> None:
    await client.start_session([], options(tmp_path))
    await client.status()  # the workspace has been read: the answer below is complete (``ready`` is true)

    status = await client.protocol.send_request_async("hostBridge/status", None)
    with pytest.raises(Exception, match="initialize was already sent"):
        await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    with pytest.raises(Exception, match=r"invalid params: server: Field required"):
        await client.protocol.send_request_async("hostBridge/restartServer", None)

    assert status == {"servers": [], "candidates": [], "ready": True}
