"""Server configurations: VS Code mcp.json, Claude .mcp.json, settings, variables, bad entries."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from host_bridge.consent.identity import SETTINGS_SOURCE
from host_bridge.hub.config import load_servers
from host_bridge.jsonc import JsoncError, loads_jsonc
from host_bridge.uris import path_to_uri


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonc_comments_and_trailing_commas_are_accepted_but_not_inside_strings() -> None:
    text = '{\n // note\n "a": "http://x//y", /* block\n */ "b": [1, 2,],\n}'
    assert loads_jsonc(text) == {"a": "http://x//y", "b": [1, 2]}


def test_broken_jsonc_names_line_and_column() -> None:
    with pytest.raises(JsoncError, match="line 2 column"):
        loads_jsonc('{\n "a": }')


@pytest.mark.requirement("F5")
def test_a_vscode_mcp_json_server_is_loaded_with_variables_substituted(tmp_path: Path) -> None:
    write(
        tmp_path / ".vscode" / "mcp.json",
        """{
          // servers of this repo
          "servers": {
            "fs": {"type": "stdio", "command": "npx", "args": ["-y", "srv", "${workspaceFolder}", 3],
                   "env": {"TOKEN": "${env:MY_TOKEN}", "N": 1}},
            "remote": {"type": "http", "url": "https://mcp.example.com/${env:TENANT}",
                       "headers": {"Authorization": "Bearer ${env:MY_TOKEN}"}},
          },
        }""",
    )
    result = load_servers(None, [str(tmp_path)], environ={"MY_TOKEN": "t0k", "TENANT": "acme"}, home="/h")
    assert result.problems == ()
    fs, remote = result.servers
    assert fs.args == ("-y", "srv", str(tmp_path), "3")
    assert fs.env == {"TOKEN": "t0k", "N": "1"}
    assert fs.cwd == str(tmp_path)
    assert fs.workspace_defined
    assert fs.source == path_to_uri(tmp_path / ".vscode" / "mcp.json")
    assert remote.url == "https://mcp.example.com/acme"
    assert remote.headers == {"Authorization": "Bearer t0k"}
    assert remote.ref().to_wire() == {
        "id": "remote",
        "label": "remote",
        "source": remote.source,
        "transport": "http",
        "url": "https://mcp.example.com/acme",
        "identity": remote.identity.key,
        "workspaceDefined": True,
        "env": [],
        "envReferences": ["MY_TOKEN", "TENANT"],
        "headerNames": ["Authorization"],
        "passesSharedFolders": False,
    }
    assert "t0k" not in json.dumps(remote.ref().to_wire()) + json.dumps(fs.ref().to_wire())


def test_a_claude_mcp_json_server_without_type_is_stdio_or_http_by_its_fields(tmp_path: Path) -> None:
    write(
        tmp_path / ".mcp.json",
        json.dumps({"mcpServers": {"a": {"command": "uvx", "args": ["x"]}, "b": {"url": "http://127.0.0.1:9/mcp"}}}),
    )
    a, b = load_servers(None, [str(tmp_path)]).servers
    assert (a.transport, a.command) == ("stdio", "uvx")
    assert (b.transport, b.url) == ("http", "http://127.0.0.1:9/mcp")


def test_settings_servers_are_not_workspace_defined_and_keep_their_cwd_unset() -> None:
    (server,) = load_servers({"s": {"command": "srv"}}, []).servers
    assert server.source == SETTINGS_SOURCE
    assert not server.workspace_defined
    assert server.cwd is None


def test_a_bad_entry_is_reported_with_file_id_and_reason_and_the_others_still_load(tmp_path: Path) -> None:
    path = write(
        tmp_path / ".vscode" / "mcp.json",
        json.dumps(
            {
                "servers": {
                    "good": {"command": "srv"},
                    "nocmd": {"type": "stdio"},
                    "badurl": {"type": "http", "url": "file:///etc/passwd"},
                    "sse": {"type": "sse", "url": "http://h/sse"},
                    "weird": {"type": "carrier-pigeon"},
                    "ask": {"command": "srv", "env": {"K": "${input:key}"}},
                    "args": {"command": "srv", "args": "not-a-list"},
                    "notobj": 3,
                }
            }
        ),
    )
    result = load_servers(None, [str(tmp_path)])
    assert [s.id for s in result.servers] == ["good"]
    reasons = {p.server_id: p.message for p in result.problems}
    assert all(p.source == path_to_uri(path) for p in result.problems)
    assert 'needs a "command"' in reasons["nocmd"]
    assert "http:// or https://" in reasons["badurl"]
    assert "SSE transport is not supported" in reasons["sse"]
    assert "unknown type 'carrier-pigeon'" in reasons["weird"]
    assert "${input:key}" in reasons["ask"]
    assert "'args'" in reasons["args"]
    assert "must be an object" in reasons["notobj"]


@pytest.mark.requirement("F1")
def test_an_unparsable_config_file_is_reported_and_other_files_still_load(tmp_path: Path) -> None:
    write(tmp_path / ".vscode" / "mcp.json", '{"servers": {')
    write(tmp_path / ".mcp.json", json.dumps({"mcpServers": {"ok": {"command": "srv"}}}))
    result = load_servers(None, [str(tmp_path)])
    assert [s.id for s in result.servers] == ["ok"]
    (problem,) = result.problems
    assert problem.server_id is None
    assert "is not valid JSON" in problem.message and "line 1" in problem.message


@pytest.mark.requirement("F5")
def test_a_duplicate_id_keeps_the_first_definition_and_reports_the_second(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", json.dumps({"mcpServers": {"fs": {"command": "evil"}}}))
    result = load_servers({"fs": {"command": "good"}}, [str(tmp_path)])
    assert [(s.id, s.command) for s in result.servers] == [("fs", "good")]
    assert "already defined in settings" in result.problems[0].message


@pytest.mark.requirement("A18")
def test_workspace_files_are_not_read_when_reading_is_off(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", json.dumps({"mcpServers": {"fs": {"command": "srv"}}}))
    assert load_servers(None, [str(tmp_path)], read_workspace=False).servers == ()


def test_an_env_file_is_merged_under_explicit_env(tmp_path: Path) -> None:
    write(tmp_path / ".env", "# c\nexport A=1\nB='two'\nC=\"3\"\n")
    write(
        tmp_path / ".vscode" / "mcp.json",
        json.dumps({"servers": {"s": {"command": "srv", "envFile": "${workspaceFolder}/.env", "env": {"C": "x"}}}}),
    )
    (server,) = load_servers(None, [str(tmp_path)]).servers
    assert server.env == {"A": "1", "B": "two", "C": "x"}


@pytest.mark.requirement("F1")
def test_a_missing_env_file_is_a_problem_of_that_entry(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", json.dumps({"mcpServers": {"s": {"command": "srv", "envFile": "nope.env"}}}))
    result = load_servers(None, [str(tmp_path)])
    assert result.servers == ()
    assert result.problems[0].message.startswith("envFile: cannot read ")
    assert "does not exist" in result.problems[0].message


@pytest.mark.requirement("F1")
def test_config_files_and_env_files_that_are_not_regular_utf8_files_are_one_problem_each(tmp_path: Path) -> None:
    """F1: a FIFO, a link to the sidecar's own input, a bad byte, a deep nest — each is one problem, nothing hangs,
    and the user's own servers still load."""
    fifo_folder, proc_folder, bad_env, deep = (tmp_path / n for n in ("fifo", "proc", "env", "deep"))
    for folder in (fifo_folder, proc_folder, bad_env, deep):
        (folder / ".vscode").mkdir(parents=True)
    os.mkfifo(fifo_folder / ".vscode" / "mcp.json")
    (proc_folder / ".vscode" / "mcp.json").symlink_to("/proc/self/fd/0")
    (bad_env / "bad.env").write_bytes(b"TOKEN=ok\nOTHER=\xff\n")
    write(bad_env / ".mcp.json", json.dumps({"mcpServers": {"e": {"command": "srv", "envFile": "bad.env"}}}))
    (bad_env / "fd.env").symlink_to("/proc/self/fd/0")
    write(bad_env / ".vscode" / "mcp.json", json.dumps({"servers": {"f": {"command": "srv", "envFile": "fd.env"}}}))
    write(deep / ".mcp.json", '{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}")

    result = load_servers(
        {"mine": {"command": "srv"}}, [str(f) for f in (fifo_folder, proc_folder, bad_env, deep)], home="/h"
    )

    assert [s.id for s in result.servers] == ["mine"]
    messages = [p.message for p in result.problems]
    assert len(messages) == 5, messages
    assert "named pipe" in messages[0]
    assert "/proc" in messages[1] and "never read as a repository file" in messages[1]
    assert messages[2].startswith("envFile: cannot read") and "never read as a repository file" in messages[2]
    assert "not valid UTF-8 (byte 0xff" in messages[3]
    assert "nested more than 64 levels" in messages[4]


@pytest.mark.parametrize(
    "change",
    [{"command": "other"}, {"args": ["x", "y"]}, {"env": {"K": "2"}}, {"cwd": "/elsewhere"}],
)
@pytest.mark.requirement("B7")
def test_any_launch_change_gives_a_new_fingerprint(change: dict[str, object]) -> None:
    base: dict[str, object] = {"command": "srv", "args": ["x"], "env": {"K": "1"}, "cwd": "/w"}
    (before,) = load_servers({"s": base}, []).servers
    (after,) = load_servers({"s": {**base, **change}}, []).servers
    assert before.fingerprint != after.fingerprint
    assert before.fingerprint == load_servers({"s": dict(base)}, []).servers[0].fingerprint
