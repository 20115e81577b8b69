"""``host-bridge connect`` as a user runs it: a real process, real fixture servers, consent on a real terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.paths import SERVERS
from support.records import recorded_roots

from host_bridge.uris import canonical_path, path_to_uri

WAIT = 60.0
NO_TERMINAL = "no terminal to ask for consent; pass --allow PATH for each folder to share"


def server_spec(server_id: str, script: str, *args: str) -> str:
    """A ``--server ID=COMMAND`` value running a fixture server with this interpreter."""
    return f"{server_id}={shlex.join([sys.executable, str(SERVERS / script), *args])}"


def recorder(record: Path) -> str:
    return server_spec("rec", "roots_recorder.py", "--record", str(record), "--pin", "2025-11-25")


def resources() -> str:
    return server_spec("res", "resources_server.py", "--count", "3", "--pin", "2025-11-25")


def connect_command(*args: str, sandbox: str | None = "off") -> list[str]:
    """``host-bridge connect`` with ``args``; the fixture servers write their records outside their shared folders, so
    the OS sandbox is off unless ``sandbox`` is ``None`` (the product's default)."""
    flags = [] if sandbox is None else ["--sandbox", sandbox]
    return [sys.executable, "-m", "host_bridge", "connect", *flags, *args]


def run_connect(*args: str, sandbox: str | None = "off") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        connect_command(*args, sandbox=sandbox),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )


def consent_roots(storage: Path) -> list[dict[str, Any]]:
    path = storage / "consent.json"
    return json.loads(path.read_text())["roots"] if path.exists() else []


def uri_of(folder: Path) -> str:
    return path_to_uri(canonical_path(folder))


class Transcript:
    """What a process wrote to a pipe or terminal, read as it comes, waited on with a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.text = ""
        self._mark = 0
        self.closed = False

    def expect(self, needle: str, timeout: float = WAIT) -> str:
        """Wait for ``needle`` after the previous match; returns the text up to and including it."""
        deadline = time.monotonic() + timeout
        while (found := self.text.find(needle, self._mark)) < 0:
            if self.closed or not self._read(deadline - time.monotonic()):
                raise AssertionError(f"{needle!r} did not appear; the output was:\n{self.text}")
        start, self._mark = self._mark, found + len(needle)
        return self.text[start : self._mark]

    def drain(self, timeout: float = WAIT) -> str:
        """Read until the writer closes its end; returns everything."""
        deadline = time.monotonic() + timeout
        while not self.closed and self._read(deadline - time.monotonic()):
            pass
        return self.text

    def _read(self, remaining: float) -> bool:
        if remaining <= 0:
            return False
        ready, _, _ = select.select([self.fd], [], [], remaining)
        if not ready:
            return False
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # a terminal whose other side closed reads as EIO
            chunk = b""
        if not chunk:
            self.closed = True
        self.text += chunk.decode("utf-8", "replace")
        return True


def wait_exit(pid: int, transcript: Transcript, timeout: float = WAIT) -> int:
    """The exit code of the terminal's child ``pid``, which closes the terminal when it exits."""
    transcript.drain(timeout)
    if not transcript.closed:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError(f"process {pid} did not exit within {timeout} s; the output was:\n{transcript.text}")
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def follow(*args: str) -> tuple[subprocess.Popen[bytes], Transcript]:
    """Start ``connect --follow`` without a terminal; its stdout and stderr are read together."""
    process = subprocess.Popen(
        connect_command("--follow", *args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert process.stdout is not None
    return process, Transcript(process.stdout.fileno())


def interrupt(process: subprocess.Popen[bytes], transcript: Transcript) -> int:
    process.send_signal(signal.SIGINT)
    try:
        code = process.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
    transcript.drain()
    assert process.stdout is not None
    process.stdout.close()
    return code


@pytest.mark.requirement("B8")
def test_without_a_terminal_or_allow_nothing_is_shared_and_the_user_is_told_how(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    record = tmp_path / "record.jsonl"
    storage = tmp_path / "storage"

    process, transcript = follow("--server", recorder(record), "--storage-dir", str(storage), str(folder))
    transcript.expect(NO_TERMINAL)
    transcript.expect("[rec] running (protocol 2025-11-25)")
    transcript.expect("[rec] roots/list answered: (nothing shared)")
    code = interrupt(process, transcript)

    assert code == 0, transcript.text
    assert "[rec] shared folders: none" in transcript.text
    answers = recorded_roots(record)
    assert answers and all(roots == [] for roots in answers), answers
    assert consent_roots(storage) == []


@pytest.mark.requirement("A8")
def test_allow_shares_exactly_the_canonical_folder_and_remembers_it(tmp_path: Path) -> None:
    real = tmp_path / "project"
    real.mkdir()
    (tmp_path / "other").mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    record = tmp_path / "record.jsonl"
    storage = tmp_path / "storage"

    process, transcript = follow(
        "--server",
        recorder(record),
        "--storage-dir",
        str(storage),
        "--allow",
        str(link),
        str(link),
        str(tmp_path / "other"),
    )
    transcript.expect(f"[rec] shared folders: {canonical_path(real)} (")
    transcript.expect(f"[rec] roots/list answered: {canonical_path(real)} (")
    code = interrupt(process, transcript)

    assert code == 0, transcript.text
    assert NO_TERMINAL not in transcript.text
    answers = recorded_roots(record)
    assert answers and all(roots == [uri_of(real)] for roots in answers), answers
    assert [(r["path"], r["decision"], r["serverId"]) for r in consent_roots(storage)] == [
        (canonical_path(real), "allow", "rec")
    ]


def test_allow_session_shares_without_writing_a_decision(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    record = tmp_path / "record.jsonl"
    storage = tmp_path / "storage"

    process, transcript = follow(
        "--server",
        recorder(record),
        "--storage-dir",
        str(storage),
        "--allow",
        str(folder),
        "--allow-session",
        str(folder),
    )
    transcript.expect(f"[rec] roots/list answered: {canonical_path(folder)} (")
    code = interrupt(process, transcript)

    assert code == 0, transcript.text
    assert recorded_roots(record)[-1] == [uri_of(folder)]
    assert consent_roots(storage) == []


def test_list_prints_every_resource_of_the_server(tmp_path: Path) -> None:
    result = run_connect("--server", resources(), "--storage-dir", str(tmp_path / "s"), "--list", str(tmp_path))

    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("res ")]
    assert rows == [["res", f"test://res/{i}", f"res-0000{i}", "text/plain"] for i in range(3)]


def test_read_prints_the_text_of_a_resource(tmp_path: Path) -> None:
    result = run_connect(
        "--server", resources(), "--storage-dir", str(tmp_path / "s"), "--read", "test://res/1", str(tmp_path)
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "content of res 1"


def test_reading_an_unknown_resource_fails_with_a_not_found_message(tmp_path: Path) -> None:
    result = run_connect(
        "--server",
        resources(),
        "--server-id",
        "res",
        "--storage-dir",
        str(tmp_path / "s"),
        "--read",
        "test://nope",
        str(tmp_path),
    )

    assert result.returncode == 1
    assert "resource test://nope was not found on MCP server 'res'" in result.stderr


def test_usage_errors_exit_2_before_starting_anything(tmp_path: Path) -> None:
    storage = str(tmp_path / "s")
    no_command = run_connect("--server", "rec", "--storage-dir", storage, str(tmp_path))
    missing = run_connect(
        "--server", resources(), "--allow", str(tmp_path / "missing"), "--storage-dir", storage, str(tmp_path)
    )
    unknown_id = run_connect("--server", resources(), "--server-id", "nope", "--storage-dir", storage, str(tmp_path))

    assert (no_command.returncode, missing.returncode, unknown_id.returncode) == (2, 2, 2)
    assert "write ID=COMMAND" in no_command.stderr
    assert "no such folder" in missing.stderr
    assert "'nope' is not one of the servers" in unknown_id.stderr


@pytest.mark.requirement("F5")
def test_on_a_terminal_the_user_is_asked_per_folder_and_only_yes_is_shared_and_remembered(tmp_path: Path) -> None:
    yes, no = tmp_path / "yes-folder", tmp_path / "no-folder"
    yes.mkdir()
    no.mkdir()
    record = tmp_path / "record.jsonl"
    storage = tmp_path / "storage"
    argv = connect_command("--follow", "--server", recorder(record), "--storage-dir", str(storage), str(yes), str(no))

    pid, master = pty.fork()
    if pid == 0:  # the child: its terminal is the pty
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    transcript = Transcript(master)
    try:
        for _ in range(2):
            question = transcript.expect("[d]eny always: ")
            assert question.rstrip().endswith("with rec? [y]es / [s]ession / [n]o / [d]eny always:")
            os.write(master, b"y\r" if f"Share {canonical_path(yes)} (" in question else b"n\r")
        transcript.expect(f"[rec] roots/list answered: {canonical_path(yes)} (")
        os.write(master, b"\x03")
        code = wait_exit(pid, transcript)
    finally:
        os.close(master)

    assert code == 0, transcript.text
    assert transcript.text.count("MCP Host Bridge: the MCP server 'rec' would see the folders you share") == 1
    assert "Defined in: your settings" in transcript.text
    assert f"Runs: {sys.executable} " in transcript.text
    answers = recorded_roots(record)
    assert answers and all(roots == [uri_of(yes)] for roots in answers), answers
    assert [(r["path"], r["decision"], r["serverId"], r["source"]) for r in consent_roots(storage)] == [
        (canonical_path(yes), "allow", "rec", "settings")
    ]


def test_the_embedded_server_in_the_default_sandbox_lists_files_and_commits_of_a_shared_repository(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# Demo\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "first commit"], check=True)

    result = run_connect(
        "--storage-dir", str(tmp_path / "storage"), "--allow", str(repo), "--list", str(repo), sandbox=None
    )

    assert result.returncode == 0, result.stderr
    listed = result.stdout[result.stdout.index("SERVER") :]
    assert f"{uri_of(repo)}/README.md" in listed
    assert f"{uri_of(repo)}/pyproject.toml" in listed
    assert "git://" in listed and "/commit/" in listed


@pytest.mark.requirement("G3")
def test_a_folder_inside_one_shared_on_the_terminal_is_not_asked_about(tmp_path: Path) -> None:
    """G3 on the terminal: once acme is shared, packages/ui inside it is noted as visible through it, not asked."""
    acme = tmp_path / "acme"
    ui = acme / "packages" / "ui"
    ui.mkdir(parents=True)
    (acme / "package.json").write_text('{"name": "acme", "workspaces": ["packages/*"]}')
    (ui / "package.json").write_text('{"name": "@acme/ui"}')
    record = tmp_path / "record.jsonl"
    argv = connect_command("--server", recorder(record), "--storage-dir", str(tmp_path / "storage"), str(acme))

    pid, master = pty.fork()
    if pid == 0:
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    transcript = Transcript(master)
    try:
        question = transcript.expect("[d]eny always: ")
        assert f"Share {canonical_path(acme)} (acme" in question
        os.write(master, b"y\r")
        code = wait_exit(pid, transcript)
    finally:
        os.close(master)

    assert code == 0, transcript.text
    assert transcript.text.count("[d]eny always: ") == 1, "ui was not asked about"
    assert f"note: {canonical_path(ui)} is visible to rec through {canonical_path(acme)}" in transcript.text
    assert [(r["path"], r["decision"]) for r in consent_roots(tmp_path / "storage")] == [
        (str(canonical_path(acme)), "allow")
    ]
