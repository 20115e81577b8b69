"""``host-bridge agents``: the entries that route agents through ``host-bridge attach``, printed, and written into each
agent's configuration format with the rest of the file kept (file contents checked); a write happens only after a yes,
and an agent's entry that would start a second, unconfined copy of a server host_bridge runs is pointed out."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

from support.terminal import WAIT, environment, host_bridge, on_terminal

FS = {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}


def project(tmp_path: Path) -> Path:
    """A folder whose .vscode/mcp.json defines the server ``fs`` (host_bridge reads it; agents do not)."""
    folder = tmp_path / "acme"
    (folder / ".vscode").mkdir(parents=True)
    (folder / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {"fs": FS}}))
    return folder


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        host_bridge("agents", "--command", "host-bridge", "--storage-dir", str(tmp_path / "storage"), *args),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=environment(HOME=str(tmp_path / "home")),
        check=False,
    )


def attach(folder: Path, tmp_path: Path, server: str = "fs") -> dict[str, Any]:
    args = ["attach", server, "--workspace", str(folder.resolve()), "--storage-dir", str(tmp_path / "storage")]
    return {"command": "host-bridge", "args": args}


def test_it_prints_the_entries_of_every_agent_for_the_folder_s_servers(tmp_path: Path) -> None:
    folder = project(tmp_path)

    done = run(tmp_path, str(folder))

    assert done.returncode == 0, done.stderr
    entry = attach(folder, tmp_path)
    assert json.dumps({"mcpServers": {"fs": entry}}, indent=2) in done.stdout
    assert f"claude mcp add fs -- host-bridge attach fs --workspace {folder.resolve()}" in done.stdout
    assert '[mcp_servers.fs]\ncommand = "host-bridge"\nargs = ["attach", "fs", "--workspace"' in done.stdout
    assert "## Gemini CLI" in done.stdout and "## VS Code agent sessions" in done.stdout
    assert f"fs: host-bridge attach fs --workspace {folder.resolve()}" in done.stdout


def test_write_to_a_claude_code_mcp_json_adds_the_entry_keeps_the_rest_and_points_out_the_unconfined_copy(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    target = folder / ".mcp.json"
    target.write_text(json.dumps({"mcpServers": {"fs": FS, "web": {"url": "https://x.example/mcp"}}, "note": [1]}))

    done = run(tmp_path, str(folder), "--write", str(target), "--yes")

    assert done.returncode == 0, done.stderr
    written = json.loads(target.read_text())
    # host_bridge reads .mcp.json too, so 'web' is one of its servers as well.
    assert written == {
        "mcpServers": {
            "fs": FS,
            "web": {"url": "https://x.example/mcp"},
            "fs-via-host-bridge": attach(folder, tmp_path),
            "web-via-host-bridge": attach(folder, tmp_path, "web"),
        },
        "note": [1],
    }
    assert "'fs' starts its own copy of the server host_bridge runs as 'fs'" in done.stderr
    assert "'web' starts its own copy of the server host_bridge runs as 'web'" in done.stderr
    assert '+    "fs-via-host-bridge": {' in done.stdout  # the change was shown


def test_write_to_a_gemini_settings_json_creates_or_extends_it_keeping_other_settings(tmp_path: Path) -> None:
    folder = project(tmp_path)
    target = folder / ".gemini" / "settings.json"
    target.parent.mkdir()
    target.write_text(json.dumps({"theme": "GitHub", "mcpServers": {"other": {"command": "other-server"}}}))

    done = run(tmp_path, str(folder), "--write", str(target), "--yes")
    again = run(tmp_path, str(folder), "--write", str(target), "--yes")

    assert done.returncode == 0, done.stderr
    assert json.loads(target.read_text()) == {
        "theme": "GitHub",
        "mcpServers": {"other": {"command": "other-server"}, "fs": attach(folder, tmp_path)},
    }
    assert again.returncode == 0 and "nothing to change" in again.stderr


def test_write_to_a_codex_config_toml_replaces_only_its_own_table_and_keeps_every_other_line(tmp_path: Path) -> None:
    folder = project(tmp_path)
    target = tmp_path / "home" / ".codex" / "config.toml"
    target.parent.mkdir(parents=True)
    kept_head = 'model = "o3"  # my model\n\n[mcp_servers.other]\ncommand = "other-server"\nargs = ["--x"]\n\n'
    old_fs = '[mcp_servers.fs]\ncommand = "npx"\nargs = ["-y", "@modelcontextprotocol/server-filesystem"]\n\n'
    kept_tail = '[profiles.fast]\nmodel = "o4-mini"\n'
    target.write_text(kept_head + old_fs + kept_tail)

    done = run(tmp_path, str(folder), "--write", str(target), "--yes")

    assert done.returncode == 0, done.stderr
    text = target.read_text()
    assert text.startswith(kept_head + kept_tail)
    document = tomllib.loads(text)
    assert document["mcp_servers"]["fs"] == attach(folder, tmp_path)
    assert document["mcp_servers"]["other"] == {"command": "other-server", "args": ["--x"]}
    assert document["model"] == "o3" and document["profiles"] == {"fast": {"model": "o4-mini"}}
    assert "-[mcp_servers.fs]" in done.stdout and '-command = "npx"' in done.stdout  # the unconfined copy goes
    assert "starts its own copy" not in done.stderr


def test_write_to_a_vscode_mcp_json_uses_its_servers_format(tmp_path: Path) -> None:
    folder = project(tmp_path)
    target = tmp_path / "elsewhere" / ".vscode" / "mcp.json"

    done = run(tmp_path, str(folder), "--write", str(target), "--yes")

    assert done.returncode == 0, done.stderr
    assert json.loads(target.read_text()) == {"servers": {"fs": {"type": "stdio", **attach(folder, tmp_path)}}}


def test_nothing_is_written_without_a_yes(tmp_path: Path) -> None:
    folder = project(tmp_path)
    target = folder / ".mcp.json"
    target.write_text('{"mcpServers": {}}')
    argv = host_bridge(
        "agents",
        "--command",
        "host-bridge",
        "--storage-dir",
        str(tmp_path / "storage"),
        str(folder),
        "--write",
        str(target),
    )

    without_terminal = run(tmp_path, str(folder), "--write", str(target))
    with on_terminal(argv, env=environment(HOME=str(tmp_path / "home"))) as terminal:
        terminal.expect("? [y/N] ")
        terminal.type("n")
        declined = terminal.wait()
    unchanged = target.read_text()
    with on_terminal(argv, env=environment(HOME=str(tmp_path / "home"))) as terminal:
        terminal.expect("? [y/N] ")
        terminal.type("y")
        accepted = terminal.wait()

    assert without_terminal.returncode == 2 and "add --yes" in without_terminal.stderr
    assert declined == 0 and unchanged == '{"mcpServers": {}}'
    assert accepted == 0
    assert json.loads(target.read_text()) == {"mcpServers": {"fs": attach(folder, tmp_path)}}


def test_a_folder_without_servers_and_a_file_that_is_not_json_are_usage_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    folder = project(tmp_path)
    broken = folder / ".mcp.json"
    broken.write_text("{not json")

    none = run(tmp_path, str(empty))
    bad = run(tmp_path, str(folder), "--write", str(broken), "--yes")

    assert none.returncode == 2 and "runs no MCP server" in none.stderr
    assert bad.returncode == 2 and "it is not valid JSON" in bad.stderr
    assert broken.read_text() == "{not json"
