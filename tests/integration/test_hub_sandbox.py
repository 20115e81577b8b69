"""Consent that binds: stdio servers run by the hub in the OS sandbox and with ``${hostBridge:sharedFolders}``
(docs/security.md H4). Real hub, real fixture server (``tests/servers/sandbox_probe.py``), real Landlock."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from support.folders import folder_candidate
from support.hub_harness import Harness, configs, running_hub
from support.sandbox import landlock_reason
from support.servers import python_server

from host_bridge.consent.policy import Decision
from host_bridge.hub.audit import read_audit
from host_bridge.hub.config import load_servers
from host_bridge.hub.launch import network_allowed, unix_sockets_allowed
from host_bridge.hub.models import ServerState
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.uris import canonical_path, path_to_uri

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.requirement("H4"),
    pytest.mark.skipif(bool(landlock_reason()), reason=landlock_reason() or "Landlock"),
]

QUICK = ConnectionSettings(initialize_timeout=20, request_timeout=20, backoff_initial=0.05, backoff_max=0.2)


def text_of(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent), content
    return content.text


async def call(h: Harness, server_id: str, tool: str, **arguments: Any) -> Any:
    await h.hub.ready(server_id)
    result = await h.hub.client(server_id).call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


async def outcomes(h: Harness, server_id: str, **arguments: Any) -> dict[tuple[str, str], int | None]:
    """``(op, path) → errno`` (``None``: it worked) of one ``probe`` call."""
    answers = await call(h, server_id, "probe", **arguments)
    return {(o["op"], o["path"]): o["errno"] for o in answers}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Two workspace folders (``webapp``, ``billing``), a home with an SSH key, and a folder outside both."""
    base = canonical_path(tmp_path)
    home = Path(base) / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    monkeypatch.setenv("HOME", str(home))
    folders = {"home": home, "ssh_key": home / ".ssh" / "id_ed25519", "outside": Path(base) / "elsewhere"}
    folders["outside"].mkdir()
    for name in ("webapp", "billing"):
        folder = Path(base) / "work" / name
        folder.mkdir(parents=True)
        (folder / "README.md").write_text(name)
        folders[name] = folder
    return folders


async def test_the_default_sandbox_refuses_what_was_not_shared_and_a_consent_change_restarts_it_wider(
    tmp_path: Path, world: dict[str, Path]
) -> None:
    webapp, billing = world["webapp"], world["billing"]
    servers = configs({"probe": python_server("sandbox_probe")})
    candidates = [folder_candidate(webapp), folder_candidate(billing)]
    async with running_hub(
        tmp_path / "storage", servers, candidates, connection_settings=QUICK, sandbox="enforce"
    ) as h:
        await h.wait_running("probe")
        h.allow("probe", webapp)
        await h.recorder.wait_for(
            lambda: (
                (launch := h.hub.connection("probe").launch) is not None
                and launch.folders == (str(webapp),)
                and h.state("probe") == "running"
            )
        )
        first_pid = (await call(h, "probe", "started_with"))["pid"]

        seen = await outcomes(
            h,
            "probe",
            read=[str(webapp / "README.md"), str(billing / "README.md"), str(world["ssh_key"])],
            write=[str(webapp / "new.txt"), str(world["outside"] / "dropped.txt"), str(billing / "dropped.txt")],
            list=[str(billing)],
        )
        assert seen[("read", str(webapp / "README.md"))] is None
        assert seen[("write", str(webapp / "new.txt"))] is None
        for refused in [
            ("read", billing / "README.md"),
            ("read", world["ssh_key"]),
            ("write", world["outside"] / "dropped.txt"),
            ("write", billing / "dropped.txt"),
            ("list", billing),
        ]:
            assert seen[(refused[0], str(refused[1]))] == errno.EACCES, refused
        assert not (world["outside"] / "dropped.txt").exists()

        status = next(s for s in h.hub.statuses() if s.id == "probe")
        assert status.sandbox is not None and status.sandbox.enforced and status.sandbox.mechanism == "landlock"
        assert "sandbox" in status.reach

        # A Landlock ruleset cannot widen: sharing billing restarts the server under a policy that includes it.
        h.allow("probe", billing)
        await h.recorder.wait_for(
            lambda: (
                (launch := h.hub.connection("probe").launch) is not None
                and launch.folders == tuple(sorted([str(webapp), str(billing)]))
                and h.state("probe") == "running"
            )
        )
        assert (await call(h, "probe", "started_with"))["pid"] != first_pid
        seen = await outcomes(h, "probe", read=[str(billing / "README.md")], write=[str(world["outside"] / "x")])
        assert seen[("read", str(billing / "README.md"))] is None
        assert seen[("write", str(world["outside"] / "x"))] == errno.EACCES

    launches = [e for e in read_audit(str(tmp_path / "storage")) if e.kind == "launch"]
    assert launches and "Landlock" in (launches[-1].sandbox or "")


async def test_a_folder_shared_during_the_handshake_restarts_the_server_before_it_is_ever_reported_running(
    tmp_path: Path, world: dict[str, Path]
) -> None:
    # Folders are asked about while a server starts; a server whose command line (or sandbox) holds its folders was
    # fixed when it was spawned, so an answer that comes during the handshake restarts it. The process started
    # without the folder must never be reported running (a listing then failed, and the status said it shared a
    # folder that process was never given).
    webapp, billing, gate = world["webapp"], world["billing"], tmp_path / "gate"
    entry = python_server("sandbox_probe", "--hold-until", str(gate), "${hostBridge:sharedFolders}")
    entry["sandbox"] = "off"
    candidates = [folder_candidate(webapp), folder_candidate(billing)]
    async with running_hub(tmp_path / "storage", configs({"probe": entry}), candidates, connection_settings=QUICK) as h:
        # Its command line needs a folder: it waits for one, then is spawned with it and held in its handshake
        # (nothing is said then, so it is polled for).
        h.allow("probe", billing)
        await h.recorder.wait_for(lambda: h.hub.connection("probe").launch is not None, poll=0.05)
        h.allow("probe", webapp)
        gate.touch()
        both = tuple(sorted([str(webapp), str(billing)]))
        await h.recorder.wait_for(
            lambda: (
                (launch := h.hub.connection("probe").launch) is not None
                and launch.folders == both
                and h.state("probe") == "running"
            )
        )
        states = [s.state for s in h.recorder.statuses if s.id == "probe"]
        assert states.count(ServerState.RUNNING) == 1, [s.value for s in states]
        assert (await call(h, "probe", "started_with"))["argv"] == ["--hold-until", str(gate), *both]


async def test_shared_folders_in_the_command_line_are_exactly_the_allowed_folders_and_follow_every_change(
    tmp_path: Path, world: dict[str, Path]
) -> None:
    webapp, billing = world["webapp"], world["billing"]
    entry = python_server("sandbox_probe", "${hostBridge:sharedFolders}")
    entry["env"] = {"SHARED_FOLDERS": "${hostBridge:sharedFolders}"}
    entry["sandbox"] = "off"
    servers = configs({"probe": entry})
    candidates = [folder_candidate(webapp), folder_candidate(billing)]

    async def started() -> dict[str, Any]:
        return await call(h, "probe", "started_with")

    async def wait_for_folders(*folders: Path) -> None:
        expected = tuple(sorted(str(f) for f in folders))
        await h.recorder.wait_for(
            lambda: (
                (launch := h.hub.connection("probe").launch) is not None
                and launch.folders == expected
                and h.state("probe") == "running"
            )
        )

    async with running_hub(tmp_path / "storage", servers, candidates, connection_settings=QUICK) as h:
        # Its command line needs a folder: it waits for one rather than starting with none.
        await h.recorder.wait_for(lambda: h.state("probe") == ServerState.AWAITING_FOLDERS.value)
        assert h.hub.connection("probe").launch is None

        h.allow("probe", billing)
        await wait_for_folders(billing)
        one = await started()
        assert one["argv"] == [str(billing)]
        assert one["sharedFolders"] == str(billing)

        h.allow("probe", webapp)
        await wait_for_folders(billing, webapp)
        two = await started()
        assert two["argv"] == sorted([str(billing), str(webapp)]), "one argument per folder, in a stable order"
        assert two["sharedFolders"] == os.pathsep.join(sorted([str(billing), str(webapp)]))
        assert two["pid"] != one["pid"]

        h.forget("probe", billing)
        await wait_for_folders(webapp)
        after_revoke = await started()
        assert after_revoke["argv"] == [str(webapp)]
        assert after_revoke["pid"] != two["pid"]

        fingerprint = h.hub.connection("probe").config.fingerprint
        assert fingerprint == configs({"probe": entry})[0].fingerprint, "the unexpanded config is fingerprinted"


async def test_a_refused_path_on_the_servers_stderr_becomes_a_question_about_its_folder(
    tmp_path: Path, world: dict[str, Path]
) -> None:
    secret = world["billing"] / "README.md"
    servers = configs({"probe": python_server("sandbox_probe", "--startup-read", str(secret))})
    candidates = [folder_candidate(world["webapp"]), folder_candidate(world["billing"])]
    async with running_hub(
        tmp_path / "storage", servers, candidates, connection_settings=QUICK, sandbox="enforce"
    ) as h:
        await h.recorder.wait_for(lambda: bool(h.recorder.refusals))
        server_id, refusal = h.recorder.refusals[0]
        assert server_id == "probe"
        assert refusal.path == str(secret)
        assert refusal.folder == str(world["billing"])
        assert h.registry.roots_for("probe") == (), "a refusal never widens anything by itself"


@pytest.mark.requirement("I9")
async def test_a_folder_the_user_turns_read_only_restarts_the_server_and_every_write_there_is_refused(
    tmp_path: Path, world: dict[str, Path]
) -> None:
    webapp = world["webapp"]
    servers = configs({"probe": python_server("sandbox_probe")})
    async with running_hub(
        tmp_path / "storage", servers, [folder_candidate(webapp)], connection_settings=QUICK, sandbox="enforce"
    ) as h:
        await h.wait_running("probe")
        h.allow("probe", webapp)
        await h.recorder.wait_for(
            lambda: (
                (launch := h.hub.connection("probe").launch) is not None
                and launch.folders == (str(webapp),)
                and h.state("probe") == "running"
            )
        )
        first_pid = (await call(h, "probe", "started_with"))["pid"]
        assert (await outcomes(h, "probe", write=[str(webapp / "a.txt")]))[("write", str(webapp / "a.txt"))] is None

        h.allow("probe", webapp, Decision.ALLOW_READ_ONLY)
        await h.recorder.wait_for(
            lambda: (
                (launch := h.hub.connection("probe").launch) is not None
                and launch.read_only == (str(webapp),)
                and h.state("probe") == "running"
            )
        )
        assert (await call(h, "probe", "started_with"))["pid"] != first_pid
        seen = await outcomes(h, "probe", read=[str(webapp / "README.md")], write=[str(webapp / "b.txt")])
        assert seen[("read", str(webapp / "README.md"))] is None
        assert seen[("write", str(webapp / "b.txt"))] == errno.EACCES

        status = next(s for s in h.hub.statuses() if s.id == "probe")
        assert [r.uri for r in status.shared_roots] == [path_to_uri(str(webapp))], "still shared, and in its roots"
        assert status.sandbox is not None and status.sandbox.read_only == (str(webapp),)
        assert "shared read only" in status.sandbox.summary
        assert {c.name for c in status.sandbox.channels} >= {"signals", "namedSockets", "tcp", "terminals"}


@pytest.mark.requirement("I9")
async def test_a_workspace_file_cannot_turn_the_network_on_when_the_users_default_is_off(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    (folder / ".vscode").mkdir(parents=True)
    entry = {**python_server("sandbox_probe"), "network": "on", "unixSockets": "allow"}
    (folder / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {"probe": entry}}))
    (workspace_server,) = load_servers({}, [str(folder)]).servers
    (own_server,) = configs({"probe": {**python_server("sandbox_probe"), "network": "on", "unixSockets": "allow"}})

    assert not network_allowed(workspace_server, "off") and network_allowed(own_server, "off")
    assert not unix_sockets_allowed(workspace_server) and unix_sockets_allowed(own_server)
    off = {**python_server("sandbox_probe"), "network": "off"}
    (narrowed,) = configs({"probe": off})
    assert not network_allowed(narrowed, "on")
    assert own_server.fingerprint != configs({"probe": python_server("sandbox_probe")})[0].fingerprint
