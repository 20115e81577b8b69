"""``host-bridge`` as a user runs it: options checked by the parser, user errors as sentences, Ctrl-C, closed pipes,
terminal-width tables, ``--version`` and help in plain words."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from support.terminal import WAIT, environment, host_bridge, on_terminal

from host_bridge import __version__
from host_bridge.uris import canonical_path


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


def test_version_prints_the_package_version() -> None:
    result = run("--version")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"host-bridge {__version__}"


@pytest.mark.parametrize(
    "command",
    [(), ("roots",), ("audit",), ("connect",), ("consent",), ("consent", "list"), ("consent", "allow"), ("attach",)],
)
def test_help_is_in_plain_words_without_markup(command: tuple[str, ...]) -> None:
    result = run(*command, "--help")

    assert result.returncode == 0, result.stderr
    assert "usage: host-bridge" in result.stdout
    assert "``" not in result.stdout and "`" not in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("option", "value", "complaint"),
    [
        ("--max-depth", "-1", "argument --max-depth: must be from 0 to 64, not -1"),
        ("--max-candidates", "0", "argument --max-candidates: must be from 1 to 100000, not 0"),
        ("--git-timeout", "0", "argument --git-timeout: must be a number of seconds above 0"),
        ("--max-depth", "two", "argument --max-depth: 'two' is not a whole number"),
    ],
)
def test_roots_refuses_out_of_range_options_as_usage_errors(
    tmp_path: Path, option: str, value: str, complaint: str
) -> None:
    result = run("roots", option, value, str(tmp_path))

    assert result.returncode == 2
    assert "usage: host-bridge roots" in result.stderr
    assert complaint in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_roots_of_a_folder_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    result = run("roots", str(tmp_path / "missing"))

    assert result.returncode == 2
    assert result.stderr.strip() == f"host-bridge roots: {tmp_path / 'missing'}: no such folder"


def test_audit_with_a_file_as_storage_dir_says_so_without_a_traceback(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("not a folder")

    result = run("audit", "--storage-dir", str(a_file))

    assert result.returncode == 2
    assert f"argument --storage-dir: {a_file} is a file, not a folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_audit_of_an_unreadable_storage_dir_is_one_sentence(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    (storage / "audit.jsonl").mkdir(parents=True)  # a folder where the log should be: reading it fails

    result = run("audit", "--storage-dir", str(storage))

    assert result.returncode == 1
    assert result.stderr.strip() == f"host-bridge audit: {storage / 'audit.jsonl'}: is a directory"


def test_roots_json_ends_quietly_when_its_reader_has_closed_the_pipe(tmp_path: Path) -> None:
    """As in ``host-bridge roots --json | head -1`` once head has read its line and exited."""
    for index in range(30):
        (tmp_path / f"p{index}").mkdir()
        (tmp_path / f"p{index}" / "pyproject.toml").write_text(f'[project]\nname = "p{index}"\n')
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        process = subprocess.run(
            host_bridge("roots", "--json", str(tmp_path)),
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

    assert process.returncode == 141
    assert process.stderr == ""


def test_ctrl_c_while_roots_waits_for_git_exits_130_without_a_traceback(tmp_path: Path) -> None:
    root = tmp_path.resolve() / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "notes.txt").write_text("")  # untracked: git reads the ignore rules to sort it
    exclude = root / ".git" / "info" / "exclude"
    exclude.unlink(missing_ok=True)
    os.mkfifo(exclude)  # git blocks reading it until the test lets it go
    writer: int | None = None
    try:
        with on_terminal(host_bridge("roots", "--git-timeout", "60", str(root))) as terminal:
            writer = _wait_for_a_reader(exclude)
            terminal.press_ctrl_c()
            code = terminal.wait()
    finally:
        if writer is not None:
            os.close(writer)
        _release(exclude)

    assert code == 130, terminal.text
    assert "host-bridge roots: interrupted" in terminal.text
    assert "Traceback" not in terminal.text


def _wait_for_a_reader(fifo: Path) -> int:
    """Once a process has ``fifo`` open for reading (opening it to write without blocking then works), the open
    writing end: kept open, it keeps the reader blocked (closing it would give the reader end-of-file and let it go)."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing opened {fifo} within {WAIT} s") from None
            time.sleep(0.02)


def _release(fifo: Path) -> None:
    for _ in range(20):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            break


def _deep_project(tmp_path: Path) -> Path:
    deep = tmp_path / "a-rather-long-folder-name-for-a-workspace" / "with-a-project-nested-inside-it" / "service"
    deep.mkdir(parents=True)
    (deep / "pyproject.toml").write_text('[project]\nname = "a-service-whose-name-is-long-too"\n')
    return deep


def test_roots_on_an_80_column_terminal_fits_each_line_and_keeps_the_end_of_paths(tmp_path: Path) -> None:
    deep = _deep_project(tmp_path)

    with on_terminal(host_bridge("roots", str(tmp_path)), columns=80) as terminal:
        code = terminal.wait()

    assert code == 0, terminal.text
    lines = [line for line in terminal.text.splitlines() if line]
    assert lines[0].split() == ["NAME", "KINDS", "MARKERS", "PATH"]
    assert max(len(line) for line in lines) <= 80, lines
    row = next(line for line in lines if "pyproject.toml" in line)
    assert row.rstrip().endswith("/service") and "…" in row, row
    assert len(str(canonical_path(deep))) > 40


def test_roots_piped_prints_whole_cells_whatever_their_width(tmp_path: Path) -> None:
    deep = _deep_project(tmp_path)

    result = run("roots", str(tmp_path))

    assert result.returncode == 0, result.stderr
    assert canonical_path(deep) in result.stdout
    assert "…" not in result.stdout


def test_roots_json_is_unchanged_by_a_narrow_terminal(tmp_path: Path) -> None:
    deep = _deep_project(tmp_path)

    result = run("roots", "--json", str(tmp_path), env=environment(COLUMNS="40"))

    assert result.returncode == 0, result.stderr
    assert canonical_path(deep) in [c["uri"].removeprefix("file://") for c in json.loads(result.stdout)["candidates"]]
