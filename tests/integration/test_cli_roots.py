"""``host-bridge roots`` as a user runs it: a real process on real repositories."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.processes import left_behind

from host_bridge.uris import canonical_path, path_to_uri


def run_roots(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host_bridge", "roots", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def make_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def test_roots_json_lists_the_folder_and_both_repositories_with_their_metadata_names(tmp_path: Path) -> None:
    make_repo(tmp_path / "frontend")
    make_repo(tmp_path / "backend")
    (tmp_path / "frontend" / "package.json").write_text(json.dumps({"name": "@acme/web"}))
    (tmp_path / "backend" / "pyproject.toml").write_text('[project]\nname = "acme-api"\n')

    result = run_roots("--json", str(tmp_path))

    assert result.returncode == 0, result.stderr
    candidates = {c["uri"]: c for c in json.loads(result.stdout)["candidates"]}
    top = path_to_uri(canonical_path(tmp_path))
    front = candidates[path_to_uri(canonical_path(tmp_path / "frontend"))]
    back = candidates[path_to_uri(canonical_path(tmp_path / "backend"))]
    assert candidates[top]["kinds"] == ["workspaceFolder"]
    assert (front["name"], front["kinds"], front["parent"]) == ("@acme/web", ["git", "project"], top)
    assert (back["name"], back["kinds"], back["parent"]) == ("acme-api", ["git", "project"], top)
    assert set(candidates) == {top, front["uri"], back["uri"]}


@pytest.mark.requirement("A3")
def test_roots_prints_a_table_and_reports_skipped_folders_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "Cargo.toml").write_text('[package]\nname = "app-core"\n')

    result = run_roots(str(tmp_path), "vscode-remote://ssh-remote+h/x")

    assert result.returncode == 0
    assert result.stdout.splitlines()[0].split() == ["NAME", "KINDS", "MARKERS", "PATH"]
    assert "  app-core" in result.stdout and "Cargo.toml" in result.stdout
    assert "vscode-remote" in result.stderr and "not supported" in result.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs and /proc")
@pytest.mark.requirement("F3")
def test_roots_returns_with_a_notice_when_git_blocks_on_a_fifo_and_leaves_no_git_behind(tmp_path: Path) -> None:
    root = tmp_path.resolve() / "repo"
    make_repo(root)
    (root / "app").mkdir()
    (root / "app" / "package.json").write_text(json.dumps({"name": "app"}))
    exclude = root / ".git" / "info" / "exclude"
    exclude.unlink(missing_ok=True)
    os.mkfifo(exclude)
    try:
        result = run_roots("--json", "--git-timeout", "1", str(root))
        leftovers = left_behind(tmp_path.resolve())
    finally:
        for _ in range(20):  # release any reader still blocked on the FIFO, whatever happened
            try:
                os.close(os.open(exclude, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                break

    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    names = {c["name"] for c in payload["candidates"]}
    assert names == {"repo", "app"}
    [notice] = [n for n in payload["notices"] if n["kind"] == "gitError"]
    assert str(root) in notice["message"]
    assert "within 1 s in the repository" in notice["message"]
    assert f"note: {notice['message']}" in result.stderr
    assert leftovers == []


_LOADS = """
import sys
from host_bridge.hosts.cli import main
main(sys.argv[1:])
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("output", [[], ["--json"]], ids=["table", "json"])
def test_roots_loads_neither_pydantic_the_mcp_sdk_the_hub_the_terminal_session_the_gateway_nor_unneeded_parsers(
    tmp_path: Path, output: list[str]
) -> None:
    make_repo(tmp_path / "repo")
    (tmp_path / "repo" / "package.json").write_text('{"name": "app"}')

    result = subprocess.run(
        [sys.executable, "-c", _LOADS, "roots", *output, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    loaded = set(result.stderr.split())
    assert "host_bridge.workspace.detect" in loaded
    heavy = {"mcp", "mcp_types", "anyio", "httpx", "pygls", "lsprotocol", "defusedxml", "wcmatch", "configparser"}
    heavy |= {"pydantic", "pydantic_core", "host_bridge.wire", "host_bridge.workspace.models"}
    ours = ("host_bridge.hub", "host_bridge.hosts.terminal", "host_bridge.gateway.attach", "host_bridge.consent")
    assert sorted(loaded & heavy) == []
    assert sorted(name for name in loaded if name.startswith(ours)) == []


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for git")
def test_roots_walks_the_working_tree_once_with_the_walk_it_started_before_loading_detection(tmp_path: Path) -> None:
    root = tmp_path.resolve() / "repo"
    make_repo(root)
    (root / "app").mkdir()
    (root / "app" / "package.json").write_text(json.dumps({"name": "app"}))
    (root / ".gitignore").write_text("node_modules/\n")
    (root / "node_modules" / "dep").mkdir(parents=True)
    log, shim = tmp_path / "git-calls", tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{shutil.which("git")}" "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}"}

    result = run_roots("--json", str(root), env=env)

    assert result.returncode == 0, result.stderr
    assert {c["name"] for c in json.loads(result.stdout)["candidates"]} == {"repo", "app"}
    calls = log.read_text().splitlines()
    assert [call for call in calls if "ls-files" in call and "--others" in call and " -- " not in call] == [
        "-c core.fsmonitor=false ls-files -z -t -s --cached --others --directory"
    ], calls
