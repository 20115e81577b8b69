"""Real servers under the Landlock sandbox: what they are refused, and that the default policy lets them work.

Every server here is a real process started as the hub will start it (``sandboxed_launch``: a ``preexec_fn`` or the
``python -m host_bridge.sandbox.run`` wrapper) and driven over stdio by the SDK client. Errors are asserted by their
errno as the server itself saw it.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import mcp_types as types
import pytest
from support.sandbox import PEERS, ROOT, SERVERS, landlock_reason, node, policy_for, sandboxed_client, server_env

from host_bridge.sandbox.apply import SandboxStartError, sandboxed_launch
from host_bridge.sandbox.refusals import refused_paths

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(bool(landlock_reason()), reason=f"no Landlock sandbox here: {landlock_reason()}"),
    # The SDK client answers roots requests from the fixture servers; roots are deprecated as of 2026-07-28.
    pytest.mark.filterwarnings("ignore:The roots capability is deprecated:UserWarning"),
]

PROBE = SERVERS / "sandbox_probe.py"
MECHANISMS = pytest.mark.parametrize("use_runner", [False, True], ids=["preexec_fn", "runner"])


@dataclass
class Layout:
    """A user's world in ``tmp_path``: a home with secrets, a shared and a private workspace folder."""

    home: Path
    shared: Path
    private: Path
    outside: Path
    tmp: Path
    ssh_key: Path
    aws: Path
    secret: Path


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    base = tmp_path.resolve()
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".aws").mkdir()
    ssh_key = home / ".ssh" / "id_ed25519"
    ssh_key.write_text("PRIVATE KEY")
    aws = home / ".aws" / "credentials"
    aws.write_text("[default]\naws_secret_access_key = x\n")
    shared = base / "work" / "webapp"
    private = base / "work" / "billing"
    for folder in (shared, private):
        folder.mkdir(parents=True)
    (shared / "README.md").write_text("shared")
    secret = private / "secret.txt"
    secret.write_text("not shared")
    outside = base / "elsewhere"
    outside.mkdir()
    tmp = base / "server-tmp"
    tmp.mkdir()
    return Layout(home, shared, private, outside, tmp, ssh_key, aws, secret)


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[TextIO]:
    """The server's stderr, captured in a file."""
    with (tmp_path / "stderr.log").open("w+") as file:
        yield file


def text_of(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent), content
    return content.text


async def probe(client: Any, **arguments: Any) -> list[dict[str, Any]]:
    result = await client.call_tool("probe", arguments)
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


@MECHANISMS
@pytest.mark.requirement("H4")
async def test_a_server_is_refused_unshared_folders_home_secrets_and_writes_outside_its_folders(
    layout: Layout, errlog: TextIO, use_runner: bool
) -> None:
    policy = policy_for(sys.executable, [str(PROBE)], home=layout.home, shared=[layout.shared], tmp=layout.tmp)
    async with sandboxed_client(
        policy, sys.executable, [str(PROBE)], home=layout.home, cwd=layout.shared, errlog=errlog, use_runner=use_runner
    ) as client:
        outcomes = await probe(
            client,
            read=[str(layout.secret), str(layout.ssh_key), str(layout.aws), str(layout.shared / "README.md")],
            write=[str(layout.outside / "dropped.txt"), str(layout.home / ".bashrc"), str(layout.shared / "new.txt")],
            list=[str(layout.private), str(layout.home / ".ssh"), str(layout.shared)],
            tmp=True,
        )

    by_target = {(o["op"], o["path"]): o for o in outcomes}
    refused = [
        ("read", layout.secret),
        ("read", layout.ssh_key),
        ("read", layout.aws),
        ("write", layout.outside / "dropped.txt"),
        ("write", layout.home / ".bashrc"),
        ("list", layout.private),
        ("list", layout.home / ".ssh"),
    ]
    for op, path in refused:
        assert by_target[(op, str(path))]["errno"] == errno.EACCES, (op, path)
    for op, path in [
        ("read", layout.shared / "README.md"),
        ("write", layout.shared / "new.txt"),
        ("list", layout.shared),
    ]:
        assert by_target[(op, str(path))]["ok"], (op, path)
    assert (layout.shared / "new.txt").read_text() == "probe"
    assert not (layout.outside / "dropped.txt").exists()
    (tmp_file,) = [o for o in outcomes if o["op"] == "tmp"]
    assert Path(tmp_file["path"]).parent == layout.tmp, "tempfile writes to the private temp folder"


async def test_the_server_filesystem_reference_server_works_under_the_default_policy(
    layout: Layout, errlog: TextIO
) -> None:
    args = [str(PEERS / "server-filesystem" / "dist" / "index.js"), str(layout.shared)]
    policy = policy_for(node(), args, home=layout.home, shared=[layout.shared], tmp=layout.tmp)
    async with sandboxed_client(policy, node(), args, home=layout.home, cwd=layout.outside, errlog=errlog) as client:
        assert client.server_info is not None and client.server_info.name == "secure-filesystem-server"
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert "read_text_file" in tools
        listed = await client.call_tool("list_directory", {"path": str(layout.shared)})
        assert "README.md" in text_of(listed)
        written = await client.call_tool("write_file", {"path": str(layout.shared / "from-node.txt"), "content": "x"})
        assert not written.is_error, text_of(written)
    assert (layout.shared / "from-node.txt").read_text() == "x"


async def test_the_server_everything_reference_server_works_under_the_default_policy(
    layout: Layout, errlog: TextIO
) -> None:
    args = [str(PEERS / "server-everything" / "dist" / "index.js")]
    policy = policy_for(node(), args, home=layout.home, shared=[layout.shared], tmp=layout.tmp)
    async with sandboxed_client(policy, node(), args, home=layout.home, cwd=layout.outside, errlog=errlog) as client:
        assert client.server_info is not None and client.server_info.name == "mcp-servers/everything"
        resources = (await client.list_resources()).resources
        assert resources
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert "echo" in tools


@MECHANISMS
async def test_an_sdk_python_server_works_under_the_default_policy(
    layout: Layout, errlog: TextIO, use_runner: bool
) -> None:
    args = [str(SERVERS / "resources_server.py"), "--count", "3"]
    policy = policy_for(sys.executable, args, home=layout.home, shared=[layout.shared], tmp=layout.tmp)
    async with sandboxed_client(
        policy, sys.executable, args, home=layout.home, cwd=layout.outside, errlog=errlog, use_runner=use_runner
    ) as client:
        assert client.server_info is not None and client.server_info.name == "resources-server"
        resources = (await client.list_resources()).resources
        assert [r.uri for r in resources] == ["test://res/0", "test://res/1", "test://res/2"]


async def test_the_sandbox_off_setting_starts_the_server_unconfined(layout: Layout, errlog: TextIO) -> None:
    policy = policy_for(sys.executable, [str(PROBE)], home=layout.home, tmp=layout.tmp, enforce=False)
    assert not policy.enforced
    async with sandboxed_client(
        policy, sys.executable, [str(PROBE)], home=layout.home, cwd=layout.outside, errlog=errlog
    ) as client:
        (outcome,) = await probe(client, read=[str(layout.secret)])
    assert outcome["ok"]


async def test_a_path_the_user_allowed_read_only_is_readable_and_not_writable(layout: Layout, errlog: TextIO) -> None:
    policy = policy_for(
        sys.executable,
        [str(PROBE)],
        home=layout.home,
        tmp=layout.tmp,
        allowed_read=[layout.private, layout.home / "gone"],
    )
    async with sandboxed_client(
        policy, sys.executable, [str(PROBE)], home=layout.home, cwd=layout.outside, errlog=errlog
    ) as client:
        read, write = await probe(client, read=[str(layout.secret)], write=[str(layout.private / "new.txt")])
    assert read["ok"], "the missing path next to it was skipped and the start went on"
    assert write["errno"] == errno.EACCES


def run_sandboxed(policy: Any, command: list[str], home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    launch = sandboxed_launch(policy, command[0], command[1:], server_env(home))
    return subprocess.run(
        [launch.command, *launch.args],
        env=launch.env,
        cwd=cwd,
        preexec_fn=launch.preexec_fn,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.requirement("H4")
def test_a_second_restriction_cannot_grant_what_the_first_refused(layout: Layout) -> None:
    script = (
        "import sys\n"
        "from host_bridge.sandbox import landlock\n"
        "landlock.restrict([landlock.Rule('/', landlock.READ_WRITE)])\n"
        "print('restricted again')\n"
        "try:\n"
        "    open(sys.argv[1]).read()\n"
        "except PermissionError as error:\n"
        "    print('errno', error.errno)\n"
    )
    policy = policy_for(sys.executable, [], home=layout.home, tmp=layout.tmp, allowed_read=[ROOT])
    done = run_sandboxed(policy, [sys.executable, "-c", script, str(layout.ssh_key)], layout.home, ROOT)
    assert done.stdout.splitlines() == ["restricted again", f"errno {errno.EACCES}"], done.stderr


@pytest.mark.requirement("H4")
def test_the_private_files_of_other_processes_stay_closed_although_proc_is_readable(layout: Layout) -> None:
    script = (
        "import os, sys\n"
        "print(len(open('/proc/self/status').read()) > 0)\n"
        "try:\n"
        "    open(f'/proc/{os.getppid()}/environ', 'rb').read()\n"
        "except PermissionError as error:\n"
        "    print('errno', error.errno)\n"
    )
    policy = policy_for(sys.executable, [], home=layout.home, tmp=layout.tmp)
    with subprocess.Popen(["sleep", "30"]) as other:
        script = script.replace("os.getppid()", str(other.pid))
        done = run_sandboxed(policy, [sys.executable, "-c", script], layout.home, ROOT)
        other.kill()
    assert done.stdout.splitlines() == ["True", f"errno {errno.EACCES}"], done.stderr


def test_a_policy_that_cannot_be_applied_aborts_the_start_naming_the_path(layout: Layout) -> None:
    loop = layout.home / "loop"
    loop.symlink_to(loop)
    policy = policy_for(sys.executable, [str(PROBE)], home=layout.home, tmp=layout.tmp, allowed_read=[loop])
    launch = sandboxed_launch(policy, sys.executable, [str(PROBE)], server_env(layout.home), mount_layer=False)
    with pytest.raises(subprocess.SubprocessError):
        subprocess.run([launch.command, *launch.args], preexec_fn=launch.preexec_fn, capture_output=True, check=False)
    failure = launch.failure()
    assert isinstance(failure, SandboxStartError)
    assert str(loop) in str(failure) and "ELOOP" in str(failure)


def test_the_runner_exits_125_naming_the_path_when_the_policy_cannot_be_applied(layout: Layout) -> None:
    loop = layout.home / "loop"
    loop.symlink_to(loop)
    policy = policy_for(sys.executable, [str(PROBE)], home=layout.home, tmp=layout.tmp, allowed_read=[loop])
    launch = sandboxed_launch(policy, sys.executable, [str(PROBE)], server_env(layout.home), use_runner=True)
    done = subprocess.run([launch.command, *launch.args], capture_output=True, text=True, check=False)
    assert done.returncode == 125
    assert str(loop) in done.stderr and "ELOOP" in done.stderr and "not started" in done.stderr


@pytest.mark.requirement("H4")
def test_refusals_on_a_real_servers_stderr_name_the_paths_outside_the_policy(layout: Layout) -> None:
    args = [str(PROBE), "--startup-read", str(layout.secret), "--startup-write", str(layout.shared / "ok.txt")]
    policy = policy_for(sys.executable, args, home=layout.home, shared=[layout.shared], tmp=layout.tmp)
    python = run_sandboxed(policy, [sys.executable, *args], layout.home, layout.outside)
    node_script = f"require('fs').readFileSync({json.dumps(str(layout.ssh_key))})"
    node_policy = policy_for(node(), ["-e", node_script], home=layout.home, tmp=layout.tmp)
    from_node = run_sandboxed(node_policy, [node(), "-e", node_script], layout.home, layout.outside)
    shell_policy = policy_for("/bin/sh", [], home=layout.home, tmp=layout.tmp)
    shell = run_sandboxed(shell_policy, ["/bin/sh", "-c", f"cat {layout.aws}; ls {layout.private}"], layout.home, ROOT)

    assert refused_paths(python.stderr.splitlines(), policy) == [str(layout.secret)]
    assert refused_paths(from_node.stderr.splitlines(), node_policy, from_node.returncode) == [str(layout.ssh_key)]
    assert refused_paths(shell.stderr.splitlines(), shell_policy) == [str(layout.aws), str(layout.private)]


def npm_package(folder: Path, script: str) -> Path:
    """A package tarball as ``npm pack`` makes it, whose bin ``npx-probe`` runs ``script``."""
    manifest = {"name": "npx-probe", "version": "1.0.0", "bin": {"npx-probe": "bin/probe.js"}}
    tarball = folder / "npx-probe-1.0.0.tgz"
    with tarfile.open(tarball, "w:gz") as archive:
        for name, text, mode in [
            ("package/package.json", json.dumps(manifest), 0o644),
            ("package/bin/probe.js", "#!/usr/bin/env node\n" + script, 0o755),
        ]:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            archive.addfile(info, io.BytesIO(data))
    return tarball


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx is not installed")
@pytest.mark.requirement("I5")
def test_npx_installs_and_runs_a_package_in_its_private_cache_and_never_writes_the_users_npm_cache(
    layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # npm's own default cache (in the home) is what must stay untouched, not one this machine's environment names.
    for name in [n for n in os.environ if n.lower() == "npm_config_cache"]:
        monkeypatch.delenv(name)
    script = (
        "const fs = require('fs');\n"
        "let ssh = 'read';\n"
        f"try {{ fs.readFileSync({json.dumps(str(layout.ssh_key))}); }} catch (error) {{ ssh = error.code; }}\n"
        "console.log(JSON.stringify({ ran: __dirname, ssh }));\n"
    )
    tarball = npm_package(layout.outside, script)
    npx = shutil.which("npx")
    assert npx is not None
    args = ["-y", "--offline", f"--package={tarball}", "npx-probe"]
    policy = policy_for(npx, args, home=layout.home, tmp=layout.tmp, allowed_read=[tarball])
    assert not (layout.home / ".npm").exists()

    done = run_sandboxed(policy, [npx, *args], layout.home, layout.outside)

    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert Path(outcome["ran"]).is_relative_to(layout.tmp / "runner" / "npm" / "_npx"), "its own private cache"
    assert outcome["ssh"] == "EACCES"
    assert not (layout.home / ".npm").exists(), "the user's npm cache, which npx later runs unconfined, is untouched"
