"""Consent and start-up in the right order, and a failed start explained (docs/security.md H4).

A server whose command line needs its folders waits for one instead of crash-looping; a failed server that consent
could fix starts again when the user answers; a start that failed under the sandbox names what it was refused and
what the user can do. Real hub, real fixture servers, real Landlock.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from support.folders import folder_candidate
from support.hub_harness import Harness, configs, running_hub
from support.sandbox import landlock_reason
from support.servers import python_server
from support.terminal import environment

from host_bridge.consent.policy import Decision
from host_bridge.hub.audit import read_audit
from host_bridge.hub.models import ServerState
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.uris import canonical_path

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(bool(landlock_reason()), reason=landlock_reason() or "Landlock"),
]

QUICK = ConnectionSettings(initialize_timeout=20, request_timeout=20, backoff_initial=0.05, backoff_max=0.2)
USER_THINKS = 6.0
"""Seconds the user takes to answer (the injected delay, not a wait for an event)."""


def text_of(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent), content
    return content.text


async def started_with(h: Harness, server_id: str) -> dict[str, Any]:
    await h.hub.ready(server_id)
    result = await h.hub.client(server_id).call_tool("started_with", {})
    return json.loads(text_of(result))


def running_on(h: Harness, server_id: str, *folders: Path) -> bool:
    launch = h.hub.connection(server_id).launch
    expected = tuple(sorted(str(f) for f in folders))
    return launch is not None and launch.folders == expected and h.state(server_id) == "running"


@pytest.fixture
def webapp(tmp_path: Path) -> Path:
    folder = Path(canonical_path(tmp_path)) / "work" / "webapp"
    folder.mkdir(parents=True)
    return folder


def needs_folder() -> dict[str, Any]:
    """A server that exits at once without a folder on its command line, as server-filesystem does."""
    return python_server("sandbox_probe", "--require-folder", "${hostBridge:sharedFolders}")


@pytest.mark.requirement("H4")
async def test_a_server_that_needs_a_folder_waits_for_the_answer_given_6_s_later_and_then_runs_on_it(
    tmp_path: Path, webapp: Path
) -> None:
    async with running_hub(
        tmp_path / "storage",
        configs({"fs": needs_folder()}),
        [folder_candidate(webapp)],
        connection_settings=QUICK,
        sandbox="enforce",
    ) as h:
        await h.recorder.wait_for(lambda: h.state("fs") == "awaitingFolders")
        await anyio.sleep(USER_THINKS)
        connection = h.hub.connection("fs")
        assert connection.state is ServerState.AWAITING_FOLDERS and connection.starts == 0, "never started without it"
        status = next(s for s in h.hub.statuses() if s.id == "fs")
        assert status.state == "awaitingFolders" and status.last_error is None

        h.allow("fs", webapp)
        await h.recorder.wait_for(lambda: running_on(h, "fs", webapp))
        assert (await started_with(h, "fs"))["argv"] == ["--require-folder", str(webapp)]


@pytest.mark.requirement("H4")
async def test_revoking_the_last_folder_stops_the_server_cleanly_and_allowing_it_again_runs_it_on_that_folder(
    tmp_path: Path, webapp: Path
) -> None:
    async with running_hub(
        tmp_path / "storage",
        configs({"fs": needs_folder()}),
        [folder_candidate(webapp)],
        connection_settings=QUICK,
        sandbox="enforce",
    ) as h:
        h.allow("fs", webapp)
        await h.recorder.wait_for(lambda: running_on(h, "fs", webapp))
        first = (await started_with(h, "fs"))["pid"]

        h.forget("fs", webapp)
        await h.recorder.wait_for(lambda: h.state("fs") == "awaitingFolders")
        connection = h.hub.connection("fs")
        starts = connection.starts
        assert connection.last_error is None, "stopped cleanly, not counted as a crash"

        h.allow("fs", webapp)
        await h.recorder.wait_for(lambda: running_on(h, "fs", webapp))
        assert connection.starts == starts + 1
        assert (await started_with(h, "fs"))["pid"] != first
        states = [s.state.value for s in h.recorder.statuses if s.id == "fs"]
        after_revoke = states[len(states) - states[::-1].index("awaitingFolders") :]
        assert "failed" not in states and "restarting" not in after_revoke, states


@pytest.mark.requirement("H4")
async def test_a_failed_server_that_a_shared_folder_fixes_starts_again_when_it_is_shared(
    tmp_path: Path, webapp: Path
) -> None:
    # Its folder is named on its command line (mcp-server-git's --repository): under the sandbox it fails until that
    # folder is shared, then it is started again with its crash counter reset; the failure named the folder.
    entry = python_server("sandbox_probe", "--require-folder", str(webapp))
    async with running_hub(
        tmp_path / "storage",
        configs({"git": entry}),
        [folder_candidate(webapp)],
        connection_settings=dataclasses.replace(QUICK, max_crashes=1),
        sandbox="enforce",
    ) as h:
        await h.recorder.wait_for(lambda: h.state("git") == "failed")
        status = next(s for s in h.hub.statuses() if s.id == "git")
        assert status.sandbox is not None and status.sandbox.start_failure is not None
        failure = status.sandbox.start_failure
        assert failure.refused == (str(webapp),)
        assert [(a.kind, a.path) for a in failure.actions] == [("share", str(webapp)), ("sandboxOff", None)]

        h.allow("git", webapp)
        await h.recorder.wait_for(lambda: running_on(h, "git", webapp))
        status = next(s for s in h.hub.statuses() if s.id == "git")
        assert status.sandbox is not None and status.sandbox.start_failure is None


@pytest.mark.requirement("H4")
async def test_turning_the_sandbox_off_after_a_refused_start_runs_it_without_one_for_this_session(
    tmp_path: Path, webapp: Path
) -> None:
    entry = python_server("sandbox_probe", "--require-folder", str(webapp))
    async with running_hub(
        tmp_path / "storage",
        configs({"git": entry}),
        [folder_candidate(webapp)],
        connection_settings=dataclasses.replace(QUICK, max_crashes=1),
        sandbox="enforce",
    ) as h:
        await h.recorder.wait_for(lambda: h.state("git") == "failed")
        h.hub.restart("git", sandbox="off")
        await h.recorder.wait_for(lambda: h.state("git") == "running")
        status = next(s for s in h.hub.statuses() if s.id == "git")
        assert status.sandbox is not None and not status.sandbox.enforced and status.sandbox.setting == "off"
        assert "You turned the sandbox off" in status.sandbox.summary
        assert h.registry.roots_for("git") == (), "turning the sandbox off shares nothing"


@pytest.mark.requirement("H4")
async def test_a_revoked_folder_is_told_to_a_server_that_asks_for_roots_before_the_restart_enforces_it(
    tmp_path: Path, webapp: Path
) -> None:
    billing = webapp.parent / "billing"
    billing.mkdir()
    entry = python_server("roots_recorder", "--pin", "2025-11-25")
    candidates = [folder_candidate(webapp), folder_candidate(billing)]
    # A generous wait for its new roots: the order is what is tested here, bench/consent.py times it.
    settings = dataclasses.replace(QUICK, refetch_grace=15)
    async with running_hub(
        tmp_path / "storage", configs({"rec": entry}), candidates, connection_settings=settings, sandbox="enforce"
    ) as h:
        h.allow("rec", webapp)
        h.allow("rec", billing)
        await h.recorder.wait_for(lambda: running_on(h, "rec", webapp, billing))
        await h.recorder.wait_for(lambda: "roots: 2" in h.recorder.log_lines("rec"))
        starts = h.hub.connection("rec").starts

        h.forget("rec", billing)
        await h.recorder.wait_for(lambda: running_on(h, "rec", webapp))
        events = [(e.kind, len(e.roots)) for e in read_audit(str(tmp_path / "storage")) if e.server == "rec"]
        last_wide = len(events) - 1 - events[::-1].index(("launch", 2))
        assert events[last_wide + 1 :][:3] == [("roots", 2), ("roots", 1), ("launch", 1)], (
            "the running server was told and fetched its one folder before the restart that enforces it"
        )
        assert h.hub.connection("rec").starts == starts + 1

        # Making a session allow permanent changes nothing the server runs with: no restart.
        h.allow("rec", webapp, Decision.ALLOW_SESSION)
        h.allow("rec", webapp, Decision.ALLOW)
        await h.recorder.wait_for(lambda: running_on(h, "rec", webapp))
        with anyio.move_on_after(1.0):
            await h.recorder.wait_for(lambda: h.state("rec") != "running")
        assert h.state("rec") == "running" and h.hub.connection("rec").starts == starts + 1


NODE_APP = "import { x } from 'helper-dep';\nconsole.log(x);\n"


def narrow_layout(tmp_path: Path) -> Path:
    """A deliberately narrow grant: a Node and a Python program whose package root (a ``package.json`` or
    ``pyproject.toml`` beside each) does not hold what they load, a ``node_modules`` and a library folder beside."""
    tools = Path(canonical_path(tmp_path)) / "tools"
    (tools / "app").mkdir(parents=True)
    (tools / "app" / "package.json").write_text('{"type": "module"}')
    (tools / "app" / "server.mjs").write_text(NODE_APP)
    dep = tools / "node_modules" / "helper-dep"
    dep.mkdir(parents=True)
    (dep / "package.json").write_text('{"name": "helper-dep", "type": "module", "exports": {".": "./index.js"}}')
    (dep / "index.js").write_text("export const x = 1;\n")
    (tools / "py").mkdir()
    (tools / "py" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tools / "py" / "server.py").write_text("import sys\nsys.path.insert(0, sys.argv[2])\nimport helper_lib\n")
    (tools / "pylib").mkdir()
    (tools / "pylib" / "helper_lib.py").write_text("")
    return tools


@pytest.mark.requirement("H4")
async def test_a_node_and_a_python_server_refused_what_they_load_show_the_path_and_the_actions(tmp_path: Path) -> None:
    # A deliberately narrow grant: each program's package root (a package.json / pyproject.toml beside it) does not
    # hold what it loads, a node_modules and a library folder beside the package.
    tools = narrow_layout(tmp_path)
    dep = tools / "node_modules" / "helper-dep"
    servers = configs(
        {
            "node": {"type": "stdio", "command": "node", "args": [str(tools / "app" / "server.mjs")]},
            "py": {
                "type": "stdio",
                "command": sys.executable,
                "args": [str(tools / "py" / "server.py"), "--lib", str(tools / "pylib")],
            },
        }
    )
    settings = dataclasses.replace(QUICK, max_crashes=1)
    async with running_hub(tmp_path / "storage", servers, connection_settings=settings, sandbox="enforce") as h:
        await h.recorder.wait_for(lambda: h.state("node") == "failed" and h.state("py") == "failed", timeout=90)
        # Its stderr may still be draining when the exit is reported: the diagnosis takes the late lines in.
        await h.recorder.wait_for(
            lambda: all(
                (s.sandbox is not None and s.sandbox.start_failure is not None and s.sandbox.start_failure.refused)
                for s in h.hub.statuses()
                if s.id in ("node", "py")
            ),
            timeout=30,
            poll=0.2,
        )
        by_id = {s.id: s for s in h.hub.statuses()}
        for server_id, refused, folder in [
            ("node", dep / "index.js", tools / "node_modules"),
            ("py", tools / "pylib", tools / "pylib"),
        ]:
            sandbox = by_id[server_id].sandbox
            assert sandbox is not None and sandbox.start_failure is not None, server_id
            failure = sandbox.start_failure
            assert str(refused) in failure.refused, (server_id, failure)
            assert "may be the cause" in failure.sentence and str(refused) in failure.sentence
            assert [a.title for a in failure.actions] == [
                f"Let it read {folder}",
                "Turn the sandbox off for this server",
            ]

        # "Let it read" is a read-only grant the user gives; the failed server is started again with it.
        node = h.hub.connection("node")
        starts = node.starts
        h.policy.set(node.config.identity, str(tools / "node_modules"), Decision.LET_READ)
        await h.recorder.wait_for(
            lambda: node.starts > starts and node.launch is not None and node.launch.allowed_read != ()
        )
        assert node.launch is not None and node.launch.policy is not None
        assert node.launch.policy.allows(dep / "index.js") and not node.launch.policy.allows(dep, write=True)


@pytest.mark.requirement("H4")
def test_the_terminal_names_the_refused_path_and_the_actions_of_a_refused_start(tmp_path: Path) -> None:
    tools = narrow_layout(tmp_path)
    node = f"node={shutil.which('node')} {tools / 'app' / 'server.mjs'}"
    done = subprocess.run(
        [sys.executable, "-m", "host_bridge", "connect", "--storage-dir", str(tmp_path / "storage"), "--server", node],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment(),
        check=False,
    )
    refused = tools / "node_modules" / "helper-dep" / "index.js"
    assert done.returncode == 1, done.stderr
    assert f"which may be the cause: it was refused {refused}" in done.stderr, done.stderr
    assert f"Let it read {tools / 'node_modules'}: host-bridge consent let-read" in done.stderr
    assert "Turn the sandbox off for this server: run again with --sandbox off" in done.stderr


@pytest.mark.requirement("I7")
async def test_three_hundred_refusals_from_one_server_raise_at_most_five_questions(tmp_path: Path) -> None:
    elsewhere = Path(canonical_path(tmp_path)) / "elsewhere"
    files = []
    for index in range(300):
        folder = elsewhere / f"f{index:03}"
        folder.mkdir(parents=True)
        (folder / "data.txt").write_text("x")
        files += ["--startup-read", str(folder / "data.txt")]
    entry = python_server("sandbox_probe", *files)
    async with running_hub(
        tmp_path / "storage", configs({"probe": entry}), connection_settings=QUICK, sandbox="enforce"
    ) as h:
        await h.wait_running("probe")

        def refused_lines() -> int:
            return sum("Permission denied" in line for line in h.recorder.log_lines("probe"))

        await h.recorder.wait_for(lambda: refused_lines() == 300)  # every one of them refused by the kernel
        assert len(h.recorder.refusals) == 5
        assert all(r.path.startswith(str(elsewhere)) for _, r in h.recorder.refusals)
