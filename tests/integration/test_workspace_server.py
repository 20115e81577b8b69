"""The example workspace server, run as a real process behind a real hub: consent → roots → resources."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from support.folders import Git, Repo, folder_candidate
from support.hub_harness import Harness, configs, running_hub
from support.paths import REPO

from host_bridge.hub.errors import ResourceNotFoundError
from host_bridge.hub.resources.models import ResourceItem
from host_bridge.uris import canonical_path, path_to_uri

pytestmark = pytest.mark.anyio

SERVER = REPO / "examples" / "workspace_server.py"
TEMPLATE = "file:///{+path}"
README = "# Demo\n\nA project for the workspace server.\n"


def workspace_server(*args: str) -> dict[str, Any]:
    """Config entry running the example workspace server with this interpreter."""
    return {"type": "stdio", "command": sys.executable, "args": [str(SERVER), *args]}


def path_argument(path: Path) -> str:
    """The ``path`` of ``file:///{+path}`` for a local path (no leading slash)."""
    return str(path).lstrip("/")


@pytest.fixture
def project(scratch: Path, repo: Repo, git: Git) -> Path:
    """A git repository with a README, a manifest and two commits, next to a file outside it."""
    root = repo(scratch / "demo project", {"README.md": README, "pyproject.toml": '[project]\nname = "demo"\n'})
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hello')\n")
    (root / "node_modules").mkdir()
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Add the main module")
    (scratch / "outside").write_text("not shared\n")
    (scratch / "demo project-sibling").mkdir()
    (scratch / "demo project-sibling" / "secret.txt").write_text("not shared either\n")
    (root / "escape").symlink_to(scratch / "outside")
    return root


async def roots_logged(harness: Harness, server_id: str, count: int) -> None:
    """Wait until the server logged that it now has ``count`` roots."""
    line = f"workspace-server: {count} roots"
    await harness.recorder.wait_for(lambda: line in harness.recorder.log_lines(server_id), poll=0.05)


async def listed(harness: Harness, server_id: str) -> list[ResourceItem]:
    page = await harness.hub.broker.list_resources(server=server_id)
    return list(page.items)


def commits(items: list[ResourceItem]) -> list[ResourceItem]:
    return [item for item in items if item.uri.startswith("git://")]


async def test_the_workspace_server_lists_nothing_before_consent_and_the_readme_manifest_and_commits_after(
    tmp_path: Path, project: Path
) -> None:
    servers = configs({"ws": workspace_server()})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(project)]) as harness:
        await harness.wait_running("ws")
        await roots_logged(harness, "ws", 0)
        assert await listed(harness, "ws") == []

        harness.allow("ws", project)
        await roots_logged(harness, "ws", 1)
        await harness.recorder.wait_for(lambda: "ws" in harness.recorder.list_changes, poll=0.05)

        items = await listed(harness, "ws")
        root_uri = path_to_uri(canonical_path(project))
        by_uri = {item.uri: item for item in items}
        assert by_uri[f"{root_uri}/README.md"].mime_type == "text/markdown"
        assert by_uri[f"{root_uri}/pyproject.toml"].mime_type == "application/toml"
        history = commits(items)
        assert len(history) == 2
        assert all(item.uri.startswith("git://demo%20project/commit/") for item in history)
        assert [item.title for item in history] == ["Add the main module", "initial"]

        readme = await harness.hub.broker.read("ws", f"{root_uri}/README.md")
        assert readme.contents[0].text == README
        commit = await harness.hub.broker.read("ws", history[0].uri)
        text = commit.contents[0].text or ""
        assert "Add the main module" in text
        assert "src/main.py" in text
        assert text.startswith(f"commit {history[0].uri.rsplit('/', 1)[1]}\nAuthor: Test Author")


async def test_template_reads_stay_inside_the_shared_folder(tmp_path: Path, scratch: Path, project: Path) -> None:
    servers = configs({"ws": workspace_server()})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(project)]) as harness:
        await harness.wait_running("ws")
        harness.allow("ws", project)
        await roots_logged(harness, "ws", 1)
        broker = harness.hub.broker
        templates = await broker.list_templates("ws")
        assert [t.uri_template for t in templates] == [TEMPLATE]

        inside = await broker.read(
            "ws", uri_template=TEMPLATE, arguments={"path": path_argument(project / "src/main.py")}
        )
        assert inside.contents[0].text == "print('hello')\n"
        listing = await broker.read("ws", uri_template=TEMPLATE, arguments={"path": path_argument(project / "src")})
        assert listing.contents[0].text == "main.py\n"
        assert listing.contents[0].mime_type == "text/plain"

        outside = (
            f"{path_argument(project)}/../outside",
            path_argument(scratch / "outside"),
            path_argument(scratch / "demo project-sibling" / "secret.txt"),
            path_argument(project / "escape"),
            "etc/passwd",
        )
        for path in outside:
            with pytest.raises(ResourceNotFoundError):
                await broker.read("ws", uri_template=TEMPLATE, arguments={"path": path})


async def test_completion_offers_the_entries_of_the_shared_folder_without_git_and_node_modules(
    tmp_path: Path, project: Path
) -> None:
    servers = configs({"ws": workspace_server()})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(project)]) as harness:
        await harness.wait_running("ws")
        harness.allow("ws", project)
        await roots_logged(harness, "ws", 1)
        broker = harness.hub.broker
        base = path_argument(project)

        entries = await broker.complete("ws", TEMPLATE, "path", base + "/")
        assert sorted(entries.values) == [f"{base}/{name}" for name in ("README.md", "pyproject.toml", "src/")]
        prefixed = await broker.complete("ws", TEMPLATE, "path", base + "/R")
        assert prefixed.values == (f"{base}/README.md",)
        roots = await broker.complete("ws", TEMPLATE, "path", base[:3])
        assert roots.values == (base + "/",)


async def test_a_subscribed_readme_reports_its_change(tmp_path: Path, project: Path) -> None:
    servers = configs({"ws": workspace_server()})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(project)]) as harness:
        await harness.wait_running("ws")
        harness.allow("ws", project)
        await roots_logged(harness, "ws", 1)
        uri = f"{path_to_uri(canonical_path(project))}/README.md"

        await harness.hub.broker.subscribe("ws", uri)
        (project / "README.md").write_text(README + "\nChanged.\n")

        await harness.recorder.wait_for(lambda: ("ws", uri) in harness.recorder.updates, poll=0.05)


async def test_in_the_2026_era_a_read_asks_for_the_roots_and_then_the_list_follows_them(
    tmp_path: Path, project: Path
) -> None:
    servers = configs({"ws": workspace_server("--both-eras")})
    async with running_hub(tmp_path / "storage", servers, [folder_candidate(project)]) as harness:
        await harness.wait_running("ws")
        assert harness.hub.connection("ws").protocol_version == "2026-07-28"
        broker = harness.hub.broker
        readme = f"{path_to_uri(canonical_path(project))}/README.md"
        with pytest.raises(ResourceNotFoundError):
            await broker.read("ws", readme)

        harness.allow("ws", project)
        await harness.recorder.wait_for(lambda: bool(harness.hub.statuses()[0].shared_roots), poll=0.05)
        read = await broker.read("ws", readme)
        assert read.contents[0].text == README
        items = await listed(harness, "ws")
        assert readme in [item.uri for item in items]
        assert len(commits(items)) == 2
