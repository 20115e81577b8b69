"""Saved decisions from the terminal: ``host-bridge consent list|allow|deny|forget``, what ``connect`` says it
applied, ``--allow`` of the whole home folder, and servers defined in a folder's own ``.mcp.json``.

Everything runs as a user runs it: real processes, the real store, the fixture resources server, and a real
pseudo-terminal wherever a terminal matters.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.paths import SERVERS
from support.terminal import WAIT, environment, host_bridge, on_terminal

from host_bridge.uris import canonical_path

QUESTION_END = "[y,s,r,n,d,a,N,q,?] "
RESOURCES = [sys.executable, str(SERVERS / "resources_server.py"), "--count", "2", "--pin", "2025-11-25"]
SERVER = f"res={shlex.join(RESOURCES)}"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        host_bridge(*args),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=env if env is not None else environment(),
        check=False,
    )


def connect(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run("connect", "--sandbox", "off", *args, env=env)


def saved(storage: Path) -> list[tuple[str, str, str]]:
    """(server id, path, decision) of every saved folder decision (but those :func:`make_known` made)."""
    path = storage / "consent.json"
    roots: list[dict[str, Any]] = json.loads(path.read_text())["roots"] if path.exists() else []
    return sorted((r["serverId"], r["path"], r["decision"]) for r in roots if not r["path"].endswith("/seen"))


def make_known(storage: Path, server: str = SERVER) -> None:
    """Make ``server`` one host_bridge knows, as a user does: connect shares a folder (``seen``) with it."""
    seen = storage.parent / "seen"
    seen.mkdir(exist_ok=True)
    done = connect("--server", server, "--storage-dir", str(storage), "--allow", str(seen), str(seen))
    assert done.returncode == 0, done.stderr


def test_consent_allow_is_used_by_connect_which_says_it_applied_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    storage = tmp_path / "s"
    make_known(storage)

    allowed = run("consent", "allow", "--server", SERVER, "--storage-dir", str(storage), str(project))
    connected = connect("--server", SERVER, "--storage-dir", str(storage), str(project))

    assert allowed.returncode == 0, allowed.stderr
    assert f"{canonical_path(project)}: allowed (read and write) for 'res' (user settings)" in allowed.stderr
    assert connected.returncode == 0, connected.stderr
    assert f"[res] remembered: {canonical_path(project)} shared (you allowed it before)" in connected.stderr
    assert f"[res] shared folders: {canonical_path(project)} (project)" in connected.stderr
    assert "no terminal to ask for consent" in connected.stderr  # nothing else was decided


@pytest.mark.requirement("I9")
def test_consent_allow_read_only_is_saved_as_a_read_only_share_that_connect_names(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    storage = tmp_path / "s"
    make_known(storage)

    allowed = run("consent", "allow", "--read-only", "--server", SERVER, "--storage-dir", str(storage), str(project))
    connected = connect("--server", SERVER, "--storage-dir", str(storage), str(project))

    assert allowed.returncode == 0, allowed.stderr
    assert f"{canonical_path(project)}: allowed read only for 'res'" in allowed.stderr
    assert saved(storage) == [("res", canonical_path(project), "allowReadOnly")]
    assert f"[res] remembered: {canonical_path(project)} shared read only (you allowed it before)" in connected.stderr


@pytest.mark.requirement("I9")
def test_answering_r_at_the_terminal_shares_the_folder_read_only(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    storage = tmp_path / "s"
    argv = host_bridge("connect", "--sandbox", "off", "--server", SERVER, "--storage-dir", str(storage), str(project))

    with on_terminal(argv) as terminal:
        terminal.expect(QUESTION_END)
        terminal.type("r")
        code = terminal.wait()

    assert code == 0, terminal.text
    assert saved(storage) == [("res", canonical_path(project), "allowReadOnly")]


def test_connect_says_a_remembered_deny_and_does_not_ask_about_that_folder(tmp_path: Path) -> None:
    denied, other = tmp_path / "denied", tmp_path / "other"
    denied.mkdir()
    other.mkdir()
    storage = tmp_path / "s"
    make_known(storage)
    run("consent", "deny", "--server", SERVER, "--storage-dir", str(storage), str(denied))
    argv = host_bridge(
        "connect", "--sandbox", "off", "--server", SERVER, "--storage-dir", str(storage), str(denied), str(other)
    )

    with on_terminal(argv) as terminal:
        question = terminal.expect(QUESTION_END)
        terminal.type("n")
        code = terminal.wait()

    assert code == 0, terminal.text
    assert f"[res] remembered: {canonical_path(denied)} not shared (you denied it before)" in terminal.text
    assert f"Share {canonical_path(other)} (other)?" in question
    assert terminal.text.count(QUESTION_END) == 1


@pytest.mark.requirement("G7")
def test_consent_list_shows_the_decisions_of_the_servers_named(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    storage = tmp_path / "s"
    make_known(storage)
    run("consent", "allow", "--server", SERVER, "--storage-dir", str(storage), str(one))
    run("consent", "deny", "--server", SERVER, "--storage-dir", str(storage), str(two))
    unknown = run("consent", "allow", "--server", "other=some-other-server", "--storage-dir", str(storage), str(two))

    listed = run("consent", "list", "--server", SERVER, "--storage-dir", str(storage))
    as_json = run("consent", "list", "--server", SERVER, "--storage-dir", str(storage), "--json")

    assert unknown.returncode == 2
    assert "--server 'other' describes no server host_bridge knows" in unknown.stderr
    assert listed.returncode == 0, listed.stderr
    rows = [line.split()[:4] for line in listed.stdout.splitlines() if "/seen " not in line]
    assert [row[1:] for row in rows] == [
        ["SERVER", "DECISION", "PATH"],
        ["res", "allow", canonical_path(one)],
        ["res", "deny", canonical_path(two)],
    ]
    assert rows[0][0] == "HANDLE" and all(len(row[0]) == 7 for row in rows[1:])
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    records = [r for r in records if not r["path"].endswith("/seen")]
    assert [(r["serverId"], r["decision"], r["inUse"]) for r in records] == [
        ("res", "allow", True),
        ("res", "deny", True),
    ]
    assert [r["handle"] for r in records] == [row[0] for row in rows[1:]]


def test_consent_list_all_shows_every_server_and_which_are_not_in_use(tmp_path: Path) -> None:
    one = tmp_path / "one"
    one.mkdir()
    storage = tmp_path / "s"
    make_known(storage)
    make_known(storage, f"{SERVER} --count 3")
    run("consent", "allow", "--server", SERVER, "--storage-dir", str(storage), str(one))
    run("consent", "allow", "--server", f"{SERVER} --count 3", "--storage-dir", str(storage), str(one))

    listed = run("consent", "list", "--all", "--server", SERVER, "--storage-dir", str(storage))

    assert listed.returncode == 0, listed.stderr
    lines = [line for line in listed.stdout.splitlines() if "/seen " not in line]
    assert lines[0].split() == ["HANDLE", "SERVER", "DECISION", "PATH", "DEFINED", "IN", "SAVED", "IN", "USE"]
    assert sorted(line.split()[-1] for line in lines[1:]) == ["no", "yes"]  # a changed command line: another server


def test_consent_forget_removes_the_decision_so_connect_asks_again(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    storage = tmp_path / "s"
    make_known(storage)
    run("consent", "deny", "--server", SERVER, "--storage-dir", str(storage), str(project))

    forgot = run("consent", "forget", "--server", SERVER, "--storage-dir", str(storage), str(project))
    again = run("consent", "forget", "--server", SERVER, "--storage-dir", str(storage), str(project))

    assert forgot.returncode == 0, forgot.stderr
    assert f"{canonical_path(project)}: forgot deny for 'res' (user settings)" in forgot.stderr
    assert f"{canonical_path(project)}: nothing saved for 'res'" in again.stderr
    assert saved(storage) == []


def test_consent_names_the_embedded_server_by_default_and_one_server_with_server_id(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    storage = tmp_path / "s"

    default = run("consent", "allow", "--storage-dir", str(storage), str(project))
    unknown = run("consent", "deny", "--server", SERVER, "--server-id", "nope", "--storage-dir", str(storage), ".")
    one = run(
        "consent",
        "deny",
        "--server",
        SERVER,
        "--server",
        "b=other",
        "--server-id",
        "b",
        "--storage-dir",
        str(storage),
        str(project),
    )

    assert default.returncode == 0, default.stderr
    assert unknown.returncode == 2
    assert "--server-id 'nope' is not one of the servers: res" in unknown.stderr
    assert one.returncode == 2  # b=other was never run, so it is no server host_bridge knows
    assert saved(storage) == [("workspace", canonical_path(project), "allow")]


def test_session_allow_shares_a_denied_folder_this_time_and_keeps_the_saved_deny(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    storage = tmp_path / "s"
    make_known(storage)
    run("consent", "deny", "--server", SERVER, "--storage-dir", str(storage), str(project))

    result = connect(
        "--server", SERVER, "--storage-dir", str(storage), "--allow", str(project), "--allow-session", str(project)
    )

    assert result.returncode == 0, result.stderr
    assert (
        f"[res] {canonical_path(project)}: shared this session only; your saved deny stays for later" in result.stderr
    )
    assert f"[res] shared folders: {canonical_path(project)} (project)" in result.stderr
    assert saved(storage) == [("res", canonical_path(project), "deny")]


def test_session_allow_keeps_a_saved_allow(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    storage = tmp_path / "s"
    make_known(storage)
    run("consent", "allow", "--server", SERVER, "--storage-dir", str(storage), str(project))

    result = connect(
        "--server", SERVER, "--storage-dir", str(storage), "--allow", str(project), "--allow-session", str(project)
    )

    assert result.returncode == 0, result.stderr
    assert saved(storage) == [("res", canonical_path(project), "allow")]


def test_allow_of_the_home_folder_without_a_terminal_is_refused_unless_confirmed_with_a_flag(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    storage = tmp_path / "s"
    env = environment(HOME=str(home))
    make_known(storage)

    refused = connect("--server", SERVER, "--storage-dir", str(storage), "--allow", str(home), str(home), env=env)
    root = run("consent", "allow", "--server", SERVER, "--storage-dir", str(storage), "/", env=env)
    confirmed = connect(
        "--server", SERVER, "--storage-dir", str(storage), "--allow", str(home), "--confirm-broad", str(home), env=env
    )

    assert refused.returncode == 2
    assert (
        f"--allow {canonical_path(home)} would share your whole home folder with every server; confirm it on a "
        "terminal, or add --confirm-broad if you mean it"
    ) in refused.stderr
    assert root.returncode == 2
    assert "consent allow / would share the whole file system" in root.stderr
    assert confirmed.returncode == 0, confirmed.stderr
    assert saved(storage) == [("res", canonical_path(home), "allow")]


def test_allow_of_the_home_folder_on_a_terminal_needs_yes_typed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    storage = tmp_path / "s"
    argv = host_bridge(
        "connect",
        "--sandbox",
        "off",
        "--server",
        SERVER,
        "--storage-dir",
        str(storage),
        "--allow",
        str(home),
        str(home),
    )

    with on_terminal(argv, env=environment(HOME=str(home))) as terminal:
        terminal.expect("Type yes to share it: ")
        terminal.type("y")
        declined = terminal.wait()
    with on_terminal(argv, env=environment(HOME=str(home))) as terminal:
        terminal.expect("Type yes to share it: ")
        terminal.type("yes")
        accepted = terminal.wait()

    assert declined == 2
    assert accepted == 0, terminal.text
    assert saved(storage) == [("res", canonical_path(home), "allow")]


def workspace_with_server(tmp_path: Path) -> Path:
    """A folder whose .mcp.json defines the server ``ws``."""
    project = tmp_path / "project"
    project.mkdir()
    config = {"mcpServers": {"ws": {"command": RESOURCES[0], "args": [*RESOURCES[1:], "--count", "1"]}}}
    (project / ".mcp.json").write_text(json.dumps(config))
    return project


def test_a_server_defined_in_a_named_folder_does_not_start_without_trust_and_the_flag_is_named(
    tmp_path: Path,
) -> None:
    project = workspace_with_server(tmp_path)

    result = connect("--server", SERVER, "--storage-dir", str(tmp_path / "s"), "--list", str(project))

    assert result.returncode == 0, result.stderr
    assert (
        f"{canonical_path(project)}/.mcp.json defines 'ws'; a server defined in a folder starts only once you trust "
        "it: run connect on a terminal to be asked, or add --trust-workspace-servers"
    ) in result.stderr
    assert "[ws] could not be used: it is defined in a folder and not trusted" in result.stderr
    assert "test://res/0" in result.stdout and "[ws] running" not in result.stderr


def test_trust_workspace_servers_starts_the_folder_s_own_server_and_remembers_the_trust(tmp_path: Path) -> None:
    project = workspace_with_server(tmp_path)
    storage = tmp_path / "s"

    trusted = connect("--trust-workspace-servers", "--storage-dir", str(storage), "--list", str(project))
    later = connect("--storage-dir", str(storage), "--list", "--server-id", "ws", str(project))

    assert trusted.returncode == 0, trusted.stderr
    assert "[ws] running" in trusted.stderr
    assert later.returncode == 0, later.stderr
    assert [line.split()[0] for line in later.stdout.splitlines()[1:2]] == ["ws"]


def test_on_a_terminal_the_folder_s_own_server_is_started_once_trusted(tmp_path: Path) -> None:
    project = workspace_with_server(tmp_path)
    argv = host_bridge(
        "connect", "--sandbox", "off", "--server", SERVER, "--storage-dir", str(tmp_path / "s"), str(project)
    )

    with on_terminal(argv) as terminal:
        terminal.expect("defines the MCP server(s) 'ws'. They start only if you trust them.")
        terminal.expect("Trust and start them? [y]es / [n]o: ")
        terminal.type("y")
        for _ in range(2):  # the project, for res then for ws
            terminal.expect(QUESTION_END)
            terminal.type("n")
        code = terminal.wait()

    assert code == 0, terminal.text
    assert "[ws] running" in terminal.text and "[res] running" in terminal.text
