"""Real MCP servers from the registries, installed the ways users install them, under the default sandbox (H4, I5).

Each layout (``tests/compat/layouts.sh`` makes them, pinned, in ``tests/compat/.layouts``; ``make compat-layouts``)
is started by the real hub under the default Landlock sandbox with one folder shared, asked a tool call on that
folder (it works) and one on a folder outside it (refused). The package runners (``npx -y``, ``uvx``, ``pipx run``)
download at their first start into the private folder the sandbox gives each server, kept in the layout's home, so
only the first run of this tier downloads.

A fast, representative part (a local ``node_modules``, a venv's console script and ``python -m``: both runtimes'
package-tree grants) runs with every ``pytest`` and ``make test`` (``make compat-fast`` makes its venv). The rest,
marked ``compat`` (registry installs, and the runners that download at their first start: minutes on a cold
machine), is deselected by default and run by ``make compat``, which prints its time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from support.folders import folder_candidate
from support.hub_harness import configs, running_hub
from support.sandbox import landlock_reason

from host_bridge.hub.settings import ConnectionSettings
from host_bridge.uris import canonical_path

ROOT = Path(__file__).resolve().parents[2]
LAYOUTS = ROOT / "tests" / "compat" / ".layouts"
PEERS_BIN = ROOT / "tests" / "peers" / "node_modules" / ".bin"
SHARED = "${hostBridge:sharedFolders}"
FIRST_START = ConnectionSettings(initialize_timeout=180, request_timeout=60, max_crashes=2, backoff_initial=0.1)
"""A runner's first start downloads the server (on a loaded machine that takes minutes)."""

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(bool(landlock_reason()), reason=landlock_reason() or "Landlock"),
]


@dataclass(frozen=True)
class Layout:
    """One install layout: the home it lives in, the entry that starts it, and how to exercise it."""

    name: str
    home: str
    command: str
    args: tuple[str, ...]
    kind: str
    """``filesystem``, ``memory`` or ``git``: which tool calls prove the shared folder works and the outside not."""
    env: dict[str, str] = field(default_factory=dict[str, str])
    made_by: str = ""
    """The ``tests/compat/layouts.sh`` step that makes it (empty: nothing to make; ``tests/peers`` or a runner)."""
    slow: bool = True
    """Part of the slow tier (marked ``compat``, run by ``make compat``) rather than of every ``pytest``."""


def git_layout(name: str, home: str, command: str, *args: str, made_by: str, slow: bool = True) -> Layout:
    return Layout(name, home, command, args, "git", made_by=made_by, slow=slow)


LAYOUT_LIST = [
    Layout(
        "npm local (node_modules/.bin)",
        "npm-home",
        str(PEERS_BIN / "mcp-server-filesystem"),
        (SHARED,),
        "filesystem",
        slow=False,
    ),
    Layout(
        "npm -g --prefix ~/.npm-global",
        "npm-home",
        str(LAYOUTS / "npm-home" / ".npm-global" / "bin" / "mcp-server-memory"),
        (),
        "memory",
        {"MEMORY_FILE_PATH": f"{SHARED}/memory.jsonl"},
        made_by="npm-global",
    ),
    Layout(
        "npx -y",
        "npx-home",
        "npx",
        ("-y", "--before=2026-11-01", "@modelcontextprotocol/server-filesystem@2026.8.31", SHARED),
        "filesystem",
    ),
    git_layout(
        "venv console script",
        "venv-home",
        str(LAYOUTS / "venv-home" / "venvs" / "git" / "bin" / "mcp-server-git"),
        made_by="venv",
        slow=False,
    ),
    git_layout(
        "python -m",
        "venv-home",
        str(LAYOUTS / "venv-home" / "venvs" / "git" / "bin" / "python"),
        "-m",
        "mcp_server_git",
        made_by="venv",
        slow=False,
    ),
    git_layout(
        "pipx install", "pipx-home", str(LAYOUTS / "pipx-home" / ".local" / "bin" / "mcp-server-git"), made_by="pipx"
    ),
    git_layout(
        "uv tool install", "uv-home", str(LAYOUTS / "uv-home" / ".local" / "bin" / "mcp-server-git"), made_by="uv-tool"
    ),
    git_layout(
        "uvx",
        "uvx-home",
        str(LAYOUTS / "tools" / "bin" / "uvx"),
        "--exclude-newer",
        "2026-11-01",
        "--python",
        os.path.realpath(sys.executable),
        "mcp-server-git==2026.10.19",
        made_by="tools",
    ),
    # pipx runs uv underneath; its dependencies are pinned by date, as uvx's are.
    Layout(
        "pipx run",
        "pipx-run-home",
        str(LAYOUTS / "tools" / "bin" / "pipx"),
        ("run", "mcp-server-git==2026.10.19"),
        "git",
        {"UV_EXCLUDE_NEWER": "2026-11-01T00:00:00Z"},
        made_by="tools",
    ),
]


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def git_repo(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "README.md").write_text(folder.name)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


async def exercise(layout: Layout, client: Any, shared: Path, outside: Path) -> None:
    """The tool call on the shared folder works; the one on the folder outside it is refused."""
    if layout.kind == "filesystem":
        inside = await client.call_tool("list_directory", {"path": str(shared)})
        assert not inside.is_error and "README.md" in text_of(inside), text_of(inside)
        refused = await client.call_tool("list_directory", {"path": str(outside)})
        assert refused.is_error or "denied" in text_of(refused).lower(), text_of(refused)
    elif layout.kind == "memory":
        entity = {"name": "sandbox", "entityType": "test", "observations": ["works"]}
        created = await client.call_tool("create_entities", {"entities": [entity]})
        assert not created.is_error, text_of(created)
        assert (shared / "memory.jsonl").is_file(), "it wrote its memory into the shared folder"
    else:
        inside = await client.call_tool("git_status", {"repo_path": str(shared)})
        assert not inside.is_error and "Repository status" in text_of(inside), text_of(inside)
        refused = await client.call_tool("git_status", {"repo_path": str(outside)})
        assert refused.is_error, text_of(refused)


@pytest.mark.requirement("H4")
@pytest.mark.parametrize(
    "layout",
    [pytest.param(layout, id=layout.name, marks=[pytest.mark.compat] if layout.slow else []) for layout in LAYOUT_LIST],
)
async def test_a_real_server_in_this_install_layout_works_on_its_shared_folder_and_is_refused_outside_it(
    layout: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if layout.made_by and not (LAYOUTS / f".{layout.made_by}.done").exists():
        target = "make compat-layouts" if layout.slow else "make compat-fast"
        pytest.skip(f"the {layout.name} layout is not made: run {target}")
    home = LAYOUTS / layout.home
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    for variable in ("XDG_CACHE_HOME", "XDG_DATA_HOME", "npm_config_cache", "UV_CACHE_DIR", "PIPX_HOME"):
        monkeypatch.delenv(variable, raising=False)
    base = Path(canonical_path(tmp_path))
    shared, outside = git_repo(base / "webapp"), git_repo(base / "billing")
    (outside / "secret.txt").write_text("not shared")
    entry = {"type": "stdio", "command": layout.command, "args": list(layout.args), "env": layout.env}
    async with running_hub(
        tmp_path / "storage",
        configs({"srv": entry}),
        [folder_candidate(shared), folder_candidate(outside)],
        connection_settings=FIRST_START,
        sandbox="enforce",
    ) as h:
        h.allow("srv", shared)
        await h.recorder.wait_for(
            lambda: (
                h.state("srv") == "running"
                and (launch := h.hub.connection("srv").launch) is not None
                and launch.folders == (str(shared),)
            ),
            timeout=300,
        )
        status = next(s for s in h.hub.statuses() if s.id == "srv")
        assert status.sandbox is not None and status.sandbox.enforced
        await exercise(layout, h.hub.client("srv"), shared, outside)
        launch = h.hub.connection("srv").launch
        assert launch is not None and launch.policy is not None
        assert not launch.policy.allows(outside) and not launch.policy.allows(home / ".ssh")
        if launch.policy.runners:
            assert all(
                g.path.startswith(str(home / ".cache" / "host-bridge" / "runners"))
                for g in launch.policy.read_write
                if g.kind == "cache" and g.create
            ), "a private runner folder"
