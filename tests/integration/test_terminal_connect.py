"""``host-bridge connect`` as a user runs it: a real process, real fixture servers, consent on a real terminal."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.paths import SERVERS
from support.records import recorded_roots
from support.terminal import Transcript, environment, on_terminal

from host_bridge.uris import canonical_path, path_to_uri

WAIT = 60.0
NO_TERMINAL = "no terminal to ask for consent; pass --allow PATH for each folder to share"
QUESTION_END = "[y,s,r,n,d,a,N,q,?] "


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


def run_connect(
    *args: str, sandbox: str | None = "off", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        connect_command(*args, sandbox=sandbox),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=env if env is not None else environment(),
        check=False,
    )


def consent_roots(storage: Path) -> list[dict[str, Any]]:
    path = storage / "consent.json"
    return json.loads(path.read_text())["roots"] if path.exists() else []


def uri_of(folder: Path) -> str:
    return path_to_uri(canonical_path(folder))


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


def test_list_prints_every_resource_then_every_template_of_the_server_and_nothing_else(tmp_path: Path) -> None:
    result = run_connect("--server", resources(), "--storage-dir", str(tmp_path / "s"), "--list", str(tmp_path))

    assert result.returncode == 0, result.stderr
    resources_part, templates_part = result.stdout.split("\n\n")
    assert [line.split() for line in resources_part.splitlines()] == [
        ["SERVER", "URI", "NAME", "MIMETYPE"],
        *(["res", f"test://res/{i}", f"res-0000{i}", "text/plain"] for i in range(3)),
    ]
    assert [line.split() for line in templates_part.splitlines()] == [
        ["SERVER", "URI", "TEMPLATE", "NAME", "MIMETYPE"],
        ["res", "test://items/{category}/{id}", "item", "text/plain"],
        ["res", "test://search{?q}", "search", "text/plain"],
    ]


def test_read_prints_the_text_of_a_resource(tmp_path: Path) -> None:
    result = run_connect(
        "--server", resources(), "--storage-dir", str(tmp_path / "s"), "--read", "test://res/1", str(tmp_path)
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == "content of res 1"
    assert "[res] running" in result.stderr


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

    with on_terminal(argv) as terminal:
        for _ in range(2):
            question = terminal.expect(QUESTION_END)
            assert question.rstrip().endswith(f"-folder)? {QUESTION_END.strip()}")
            terminal.type("y" if f"Share {canonical_path(yes)} (" in question else "n")
        terminal.expect(f"[rec] roots/list answered: {canonical_path(yes)} (")
        terminal.press_ctrl_c()
        code = terminal.wait()

    assert code == 0, terminal.text
    assert terminal.text.count("MCP Host Bridge: the MCP server 'rec' would see the folders you share") == 1
    assert "Defined in: your settings" in terminal.text
    assert f"Runs: {sys.executable} " in terminal.text
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

    with on_terminal(argv) as terminal:
        question = terminal.expect(QUESTION_END)
        assert f"Share {canonical_path(acme)} (acme" in question
        terminal.type("y")
        code = terminal.wait()

    assert code == 0, terminal.text
    assert terminal.text.count(QUESTION_END) == 1, "ui was not asked about"
    assert f"note: {canonical_path(ui)} is visible to rec through {canonical_path(acme)}" in terminal.text
    assert [(r["path"], r["decision"]) for r in consent_roots(tmp_path / "storage")] == [
        (str(canonical_path(acme)), "allow")
    ]


def run_on_terminal(argv: list[str], answers: list[tuple[str, str]], **kwargs: Any) -> tuple[int, str]:
    """Run ``argv`` on a terminal, typing each answer once its prompt appeared; the exit code and the output."""
    with on_terminal(argv, **kwargs) as terminal:
        for prompt, answer in answers:
            terminal.expect(prompt)
            terminal.type(answer)
        code = terminal.wait()
    return code, terminal.text


def folders(tmp_path: Path, *names: str) -> list[Path]:
    made = [tmp_path / name for name in names]
    for folder in made:
        folder.mkdir(parents=True)
    return made


def test_each_folder_is_one_short_line_after_the_server_is_described_once(tmp_path: Path) -> None:
    one, two = folders(tmp_path, "one", "two")
    argv = connect_command("--server", resources(), "--storage-dir", str(tmp_path / "s"), str(one), str(two))

    code, text = run_on_terminal(argv, [(QUESTION_END, "n"), (QUESTION_END, "n")])

    assert code == 0, text
    questions = [line for line in text.splitlines() if QUESTION_END in line]
    assert questions == [  # each followed by the answer the terminal echoed
        f"  Share {canonical_path(one)} (one)? {QUESTION_END}n",
        f"  Share {canonical_path(two)} (two)? {QUESTION_END}n",
    ]
    assert text.count("would see the folders you share with it") == 1
    assert text.count("Runs: ") == 1


def test_a_shares_this_folder_and_every_one_still_to_be_asked_about(tmp_path: Path) -> None:
    one, two, three = folders(tmp_path, "one", "two", "three")
    storage = tmp_path / "s"
    argv = connect_command("--server", resources(), "--storage-dir", str(storage), str(one), str(two), str(three))

    code, text = run_on_terminal(argv, [(QUESTION_END, "n"), (QUESTION_END, "a")])

    assert code == 0, text
    assert text.count(QUESTION_END) == 2
    assert f"{canonical_path(three)}: shared (a)" in text
    assert sorted((r["path"], r["decision"]) for r in consent_roots(storage)) == sorted(
        [(canonical_path(two), "allow"), (canonical_path(three), "allow")]
    )


def test_capital_n_shares_none_of_the_rest_and_asks_no_more(tmp_path: Path) -> None:
    one, two, three = folders(tmp_path, "one", "two", "three")
    storage = tmp_path / "s"
    argv = connect_command("--server", resources(), "--storage-dir", str(storage), str(one), str(two), str(three))

    code, text = run_on_terminal(argv, [(QUESTION_END, "y"), (QUESTION_END, "N")])

    assert code == 0, text
    assert text.count(QUESTION_END) == 2
    assert f"{canonical_path(three)}: not shared (N)" in text
    assert [(r["path"], r["decision"]) for r in consent_roots(storage)] == [(canonical_path(one), "allow")]
    assert f"[res] shared folders: {canonical_path(one)} (one)" in text


def test_q_quits_keeping_the_answers_given_and_starts_no_server(tmp_path: Path) -> None:
    one, two = folders(tmp_path, "one", "two")
    storage = tmp_path / "s"
    argv = connect_command("--server", resources(), "--storage-dir", str(storage), str(one), str(two))

    code, text = run_on_terminal(argv, [(QUESTION_END, "d"), (QUESTION_END, "q")])

    assert code == 0, text
    assert "quit: the answers you gave are kept; no server was started" in text
    assert "[res] running" not in text
    assert [(r["path"], r["decision"]) for r in consent_roots(storage)] == [(canonical_path(one), "deny")]


def test_a_question_mark_explains_the_answers_and_asks_again(tmp_path: Path) -> None:
    (one,) = folders(tmp_path, "one")
    argv = connect_command("--server", resources(), "--storage-dir", str(tmp_path / "s"), str(one))

    code, text = run_on_terminal(argv, [(QUESTION_END, "?"), ("? this help", ""), (QUESTION_END, "n")])

    assert code == 0, text
    assert "a share it and every other folder still to be asked about for this server" in text
    assert text.count(f"Share {canonical_path(one)} (one)?") == 3  # asked, help, empty answer: asked again


def test_the_folder_the_user_named_is_asked_about_before_its_enclosing_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sub = repo / "sub"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    storage = tmp_path / "s"
    argv = connect_command("--server", resources(), "--storage-dir", str(storage), str(sub))

    with on_terminal(argv) as terminal:
        first = terminal.expect(QUESTION_END)
        terminal.type("y")
        second = terminal.expect(QUESTION_END)
        terminal.type("n")
        code = terminal.wait()

    assert code == 0, terminal.text
    assert f"Share {canonical_path(sub)} (sub)?" in first
    assert f"Share {canonical_path(repo)} (repo)?" in second
    assert [(r["path"], r["decision"]) for r in consent_roots(storage)] == [(canonical_path(sub), "allow")]


def test_a_named_folder_that_does_not_exist_exits_2_before_starting_anything(tmp_path: Path) -> None:
    result = run_connect("--server", resources(), "--storage-dir", str(tmp_path / "s"), str(tmp_path / "missing"))

    assert result.returncode == 2
    assert result.stderr.strip() == f"host-bridge connect: {tmp_path / 'missing'}: no such folder"
    assert result.stdout == ""


def test_a_missing_command_exits_1_and_says_it_cannot_be_started(tmp_path: Path) -> None:
    result = run_connect(
        "--server", f"gone={tmp_path / 'no-such-server'}", "--storage-dir", str(tmp_path / "s"), "--list", str(tmp_path)
    )

    assert result.returncode == 1
    assert f"[gone] could not be used: cannot start '{tmp_path / 'no-such-server'}'" in result.stderr
    assert "host-bridge connect: no server could be used" in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_a_server_that_exits_at_once_shows_its_last_stderr_lines_and_exit_status_without_verbose(
    tmp_path: Path,
) -> None:
    crashing = server_spec("res", "resources_server.py", "--fault", "crash-at-start")

    result = run_connect("--server", crashing, "--storage-dir", str(tmp_path / "s"), "--list", str(tmp_path))

    assert result.returncode == 1
    assert "[res] could not be used: the server process exited (exit status 3)" in result.stderr
    assert "[res] its last lines on stderr:\n[res]   crash-at-start: exiting with status 3\n" in result.stderr
    assert "host-bridge connect: no server could be used" in result.stderr
    assert result.stdout == ""


def test_a_server_that_never_finishes_starting_exits_1_after_the_timeout(tmp_path: Path) -> None:
    hanging = server_spec("res", "resources_server.py", "--fault", "hang-initialize")

    result = run_connect(
        "--server", hanging, "--timeout", "6", "--storage-dir", str(tmp_path / "s"), "--list", str(tmp_path)
    )

    # 6 s: long enough, on a loaded machine, for the server to start Python and print its own line.
    assert result.returncode == 1
    assert "[res] could not be used: it did not start within 6 s (raise --timeout if it is slow)" in result.stderr
    assert "hang-initialize: reading stdin, never answering" in result.stderr


def test_an_unreachable_url_exits_1_and_says_why(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on: bound, then closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    result = run_connect(
        "--server", f"web=http://127.0.0.1:{port}/mcp", "--storage-dir", str(tmp_path / "s"), str(tmp_path)
    )

    assert result.returncode == 1
    assert "[web] could not be used: " in result.stderr
    assert "host-bridge connect: no server could be used" in result.stderr


def test_one_usable_server_among_failing_ones_exits_0(tmp_path: Path) -> None:
    result = run_connect(
        "--server",
        resources(),
        "--server",
        f"gone={tmp_path / 'nope'}",
        "--storage-dir",
        str(tmp_path / "s"),
        "--list",
        str(tmp_path),
    )

    assert result.returncode == 0, result.stderr
    assert "[gone] could not be used" in result.stderr
    assert "test://res/0" in result.stdout


def test_read_redirected_to_a_file_writes_only_the_resource_even_when_asking_on_a_terminal(tmp_path: Path) -> None:
    (project,) = folders(tmp_path, "project")
    out = tmp_path / "resource.md"
    argv = connect_command(
        "--server", resources(), "--storage-dir", str(tmp_path / "s"), "--read", "test://res/1", str(project)
    )

    with out.open("wb") as handle, on_terminal(argv, stdout=handle) as terminal:
        terminal.expect(QUESTION_END)
        terminal.type("y")
        code = terminal.wait()

    assert code == 0, terminal.text
    assert out.read_text() == "content of res 1"
    assert "[res] running" in terminal.text and "NAME" in terminal.text  # progress went to the terminal


def test_read_output_saves_binary_contents_as_their_bytes(tmp_path: Path) -> None:
    saved = tmp_path / "blob.bin"

    result = run_connect(
        "--server",
        resources(),
        "--storage-dir",
        str(tmp_path / "s"),
        "--read",
        "test://blob/300",
        "--output",
        str(saved),
        str(tmp_path),
    )

    assert result.returncode == 0, result.stderr
    assert saved.read_bytes() == bytes(i % 256 for i in range(300))
    assert result.stdout == ""
    assert f"saved test://blob/300 to {saved}: 300 bytes" in result.stderr


def test_read_of_binary_contents_to_a_pipe_writes_the_bytes(tmp_path: Path) -> None:
    result = subprocess.run(
        connect_command(
            "--server", resources(), "--storage-dir", str(tmp_path / "s"), "--read", "test://blob/5", str(tmp_path)
        ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=WAIT,
        env=environment(),
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == bytes(range(5))


def test_output_without_read_is_a_usage_error(tmp_path: Path) -> None:
    result = run_connect("--server", resources(), "--output", str(tmp_path / "x"), str(tmp_path))

    assert result.returncode == 2
    assert "--output FILE saves what --read URI reads" in result.stderr


def test_json_prints_one_document_with_the_servers_resources_and_templates(tmp_path: Path) -> None:
    result = run_connect(
        "--server",
        resources(),
        "--server",
        f"gone={tmp_path / 'nope'}",
        "--storage-dir",
        str(tmp_path / "s"),
        "--allow",
        str(tmp_path),
        "--list",
        "--json",
        str(tmp_path),
    )

    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    servers = {s["id"]: s for s in document["servers"]}
    assert servers["res"]["state"] == "running"
    assert servers["res"]["sharedFolders"] == [f"{canonical_path(tmp_path)} ({tmp_path.name})"]
    assert servers["gone"]["state"] == "failed" and "cannot start" in servers["gone"]["reason"]
    assert [r["uri"] for r in document["resources"]] == [f"test://res/{i}" for i in range(3)]
    assert [t["uriTemplate"] for t in document["templates"]] == ["test://items/{category}/{id}", "test://search{?q}"]


def test_json_read_gives_the_contents_as_the_server_sent_them(tmp_path: Path) -> None:
    result = run_connect(
        "--server",
        resources(),
        "--storage-dir",
        str(tmp_path / "s"),
        "--read",
        "test://blob/3",
        "--json",
        str(tmp_path),
    )

    assert result.returncode == 0, result.stderr
    read = json.loads(result.stdout)["read"]
    assert (read["server"], read["uri"]) == ("res", "test://blob/3")
    assert read["contents"] == [{"uri": "test://blob/3", "mimeType": "application/octet-stream", "blob": "AAEC"}]


def test_quiet_leaves_out_progress_but_not_results_or_problems(tmp_path: Path) -> None:
    result = run_connect(
        "--quiet",
        "--server",
        resources(),
        "--server",
        f"gone={tmp_path / 'nope'}",
        "--storage-dir",
        str(tmp_path / "s"),
        "--list",
        str(tmp_path),
    )

    assert result.returncode == 0, result.stderr
    assert "test://res/0" in result.stdout
    assert "[gone] could not be used" in result.stderr
    assert "running" not in result.stderr and "NAME" not in result.stderr and "shared folders" not in result.stderr


def test_list_on_a_narrow_terminal_fits_its_width(tmp_path: Path) -> None:
    (project,) = folders(tmp_path, "project")
    argv = connect_command(
        "--server",
        resources(),
        "--storage-dir",
        str(tmp_path / "s"),
        "--allow",
        str(project),
        "--list",
        str(project),
    )

    with on_terminal(argv, columns=50) as terminal:
        code = terminal.wait()

    assert code == 0, terminal.text
    table = terminal.text[terminal.text.index("SERVER  ") :]
    lines = [line for line in table.splitlines() if line.strip()]
    assert max(len(line) for line in lines) <= 50, lines
    assert any("{category}/{id}" in line for line in lines)


def test_list_ends_quietly_when_its_reader_has_closed_the_pipe(tmp_path: Path) -> None:
    """As in ``host-bridge connect --list | head -1`` once head has read its line and exited."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            connect_command("--server", resources(), "--storage-dir", str(tmp_path / "s"), "--list", str(tmp_path)),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=WAIT,
            env=environment(),
            check=False,
        )
    finally:
        os.close(write_end)

    assert result.returncode == 141, result.stderr
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr
