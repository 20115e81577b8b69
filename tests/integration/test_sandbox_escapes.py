"""A hostile server under the default sandbox tries every way out besides files (docs/security.md I1, I2, I6, I8, I9).

The fixture server (``tests/servers/sandbox_probe.py``) runs as the hub starts it, in each start mechanism this
machine has: the ``preexec_fn`` (Landlock, seccomp and capabilities applied in the forked child) and the mount layer
(bubblewrap, then the runner inside it). Each attempt is asserted by the errno the server itself saw; where this
kernel or machine cannot refuse something, the test asserts that status says so instead.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import mcp_types as types
import pytest
from support.sandbox import SERVERS, landlock_reason, policy_for, sandboxed_client

from host_bridge.sandbox import mounts, seccomp
from host_bridge.sandbox.capabilities import CAP_SYS_ADMIN
from host_bridge.sandbox.confinement import channels
from host_bridge.sandbox.landlock import NET_ABI, SCOPE_ABI, landlock_abi
from host_bridge.sandbox.policy import SandboxPolicy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(bool(landlock_reason()), reason=f"no Landlock sandbox here: {landlock_reason()}"),
    pytest.mark.filterwarnings("ignore:The roots capability is deprecated:UserWarning"),
]

PROBE = SERVERS / "sandbox_probe.py"
HAS_LAYER = mounts.unavailable_reason() is None
LAYERS = pytest.mark.parametrize(
    "mount_layer",
    [False, pytest.param(True, marks=pytest.mark.skipif(not HAS_LAYER, reason=f"{mounts.unavailable_reason()}"))],
    ids=["preexec_fn", "mount_layer"],
)
REFUSED = {errno.EACCES, errno.EPERM}


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    base = tmp_path.resolve()
    home, shared, tmp, outside = base / "home", base / "work" / "webapp", base / "server-tmp", base / "elsewhere"
    for folder in (home, shared, tmp, outside):
        folder.mkdir(parents=True)
    return {"home": home, "shared": shared, "tmp": tmp, "outside": outside}


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[TextIO]:
    with (tmp_path / "stderr.log").open("w+") as file:
        yield file


def text_of(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent), content
    return content.text


async def tool(client: Any, name: str, **arguments: Any) -> Any:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


def by_op(outcomes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["op"]: o for o in outcomes}


@pytest.fixture
def listeners(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A named and an abstract UNIX socket, a TCP and a UDP socket, all listening outside the sandbox."""
    named = socket.socket(socket.AF_UNIX)
    named.bind(str(tmp_path / "agent.sock"))
    named.listen()
    abstract = socket.socket(socket.AF_UNIX)
    abstract_name = f"host-bridge-test-{os.getpid()}-{id(tmp_path)}"
    abstract.bind("\0" + abstract_name)
    abstract.listen()
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    try:
        yield {
            "unix": str(tmp_path / "agent.sock"),
            "abstract": abstract_name,
            "tcp": f"127.0.0.1:{tcp.getsockname()[1]}",
            "udp": f"127.0.0.1:{udp.getsockname()[1]}",
        }
    finally:
        for sock in (named, abstract, tcp, udp):
            sock.close()


def states(policy: SandboxPolicy, mount_layer: bool) -> dict[str, str]:
    return {channel.name: channel.state for channel in channels(policy, mount_layer=mount_layer)}


@LAYERS
@pytest.mark.requirement("I1", "I2")
async def test_a_server_cannot_signal_the_sidecar_nor_reach_named_or_abstract_sockets_of_other_programs(
    world: dict[str, Path], errlog: TextIO, listeners: dict[str, Any], mount_layer: bool
) -> None:
    policy = policy_for(sys.executable, [str(PROBE)], home=world["home"], shared=[world["shared"]], tmp=world["tmp"])
    async with sandboxed_client(
        policy,
        sys.executable,
        [str(PROBE)],
        home=world["home"],
        cwd=world["shared"],
        errlog=errlog,
        mount_layer=mount_layer,
        env={"SSH_AUTH_SOCK": listeners["unix"], "DBUS_SESSION_BUS_ADDRESS": "unix:x"},
    ) as client:
        outcomes = by_op(
            await tool(
                client, "escape", signal_pids=[os.getpid()], unix=[listeners["unix"]], abstract=[listeners["abstract"]]
            )
        )
        started = await tool(client, "started_with")

    found = states(policy, mount_layer)
    if landlock_abi() >= SCOPE_ABI:
        assert outcomes["signal"]["errno"] in REFUSED and found["signals"] == "refused"
        assert outcomes["abstract"]["errno"] in REFUSED and found["abstractSockets"] == "refused"
    else:
        assert found["signals"] == "notConfined"
    if seccomp.unavailable_reason() is None or landlock_abi() >= 9:
        assert outcomes["unix"]["errno"] in REFUSED and found["namedSockets"] == "refused"
    else:
        assert found["namedSockets"] == "notConfined"
    assert started["socketVariables"] == [], "ssh-agent's and the session bus's addresses are not passed"


@pytest.mark.requirement("I1")
async def test_a_server_the_user_let_reach_sockets_gets_them_and_status_says_so(
    world: dict[str, Path], errlog: TextIO, listeners: dict[str, Any]
) -> None:
    policy = policy_for(sys.executable, [str(PROBE)], home=world["home"], tmp=world["tmp"], unix_sockets=True)
    async with sandboxed_client(
        policy,
        sys.executable,
        [str(PROBE)],
        home=world["home"],
        cwd=world["outside"],
        errlog=errlog,
        env={"SSH_AUTH_SOCK": listeners["unix"]},
    ) as client:
        outcomes = by_op(await tool(client, "escape", unix=[listeners["unix"]], abstract=[listeners["abstract"]]))
        started = await tool(client, "started_with")

    assert outcomes["unix"]["ok"] and outcomes["abstract"]["ok"]
    assert started["socketVariables"] == ["SSH_AUTH_SOCK"]
    found = {c.name: c for c in channels(policy)}
    assert found["namedSockets"].state == "allowed" and "ssh-agent" in found["namedSockets"].sentence


@LAYERS
@pytest.mark.requirement("I9")
async def test_a_server_whose_network_is_off_is_refused_tcp_udp_and_tcp_fast_open(
    world: dict[str, Path], errlog: TextIO, listeners: dict[str, Any], mount_layer: bool
) -> None:
    policy = policy_for(sys.executable, [str(PROBE)], home=world["home"], tmp=world["tmp"], network=False)
    async with sandboxed_client(
        policy,
        sys.executable,
        [str(PROBE)],
        home=world["home"],
        cwd=world["outside"],
        errlog=errlog,
        mount_layer=mount_layer,
    ) as client:
        outcomes = by_op(
            await tool(client, "escape", tcp=[listeners["tcp"]], udp=[listeners["udp"]], fastopen=[listeners["tcp"]])
        )

    found = states(policy, mount_layer)
    if landlock_abi() >= NET_ABI:
        assert outcomes["tcp"]["errno"] in REFUSED and found["tcp"] == "refused"
    else:
        assert found["tcp"] == "notConfined"
    if seccomp.unavailable_reason() is None:
        assert outcomes["udp"]["errno"] in REFUSED and outcomes["fastopen"]["errno"] in REFUSED
        assert found["otherNetwork"] == "refused"
    else:
        assert found["otherNetwork"] == "notConfined"


async def test_a_server_whose_network_is_on_reaches_tcp(
    world: dict[str, Path], errlog: TextIO, listeners: dict[str, Any]
) -> None:
    policy = policy_for(sys.executable, [str(PROBE)], home=world["home"], tmp=world["tmp"])
    async with sandboxed_client(
        policy, sys.executable, [str(PROBE)], home=world["home"], cwd=world["outside"], errlog=errlog
    ) as client:
        outcomes = by_op(await tool(client, "escape", tcp=[listeners["tcp"]], udp=[listeners["udp"]]))
    assert outcomes["tcp"]["ok"] and outcomes["udp"]["ok"]


@LAYERS
@pytest.mark.requirement("I6")
async def test_a_server_cannot_open_or_type_into_another_terminal_and_has_no_capability_to_inject(
    world: dict[str, Path], errlog: TextIO, mount_layer: bool
) -> None:
    master, user_terminal = os.openpty()
    try:
        terminal = os.ttyname(user_terminal)
        policy = policy_for(sys.executable, [str(PROBE)], home=world["home"], tmp=world["tmp"])
        async with sandboxed_client(
            policy,
            sys.executable,
            [str(PROBE)],
            home=world["home"],
            cwd=world["outside"],
            errlog=errlog,
            mount_layer=mount_layer,
        ) as client:
            outcomes = by_op(await tool(client, "escape", terminal=[terminal, "/dev/tty"]))
            started = await tool(client, "started_with")
    finally:
        os.close(master)
        os.close(user_terminal)

    assert not outcomes["terminal"]["ok"]
    assert outcomes["terminal"]["errno"] in {errno.EACCES, errno.ENOENT, errno.ENXIO}
    assert started["capEff"] is not None and not started["capEff"] & (1 << CAP_SYS_ADMIN)


@LAYERS
@pytest.mark.requirement("I6")
async def test_dev_shm_is_private_to_the_server_or_refused(
    world: dict[str, Path], errlog: TextIO, mount_layer: bool
) -> None:
    name = f"host-bridge-probe-{os.getpid()}-{mount_layer}"
    policy = policy_for(sys.executable, [str(PROBE)], home=world["home"], tmp=world["tmp"])
    async with sandboxed_client(
        policy,
        sys.executable,
        [str(PROBE)],
        home=world["home"],
        cwd=world["outside"],
        errlog=errlog,
        mount_layer=mount_layer,
    ) as client:
        outcome = by_op(await tool(client, "escape", shm=[name]))["shm"]

    assert not os.path.exists(f"/dev/shm/{name}"), "nothing the server did reached the user's /dev/shm"
    assert outcome["ok"] if mount_layer else outcome["errno"] == errno.EACCES


@pytest.fixture
def repository(world: dict[str, Path]) -> Path:
    """The shared folder as a git repository with VS Code settings: hooks, config and .vscode exist."""
    shared = world["shared"]
    (shared / ".git" / "hooks").mkdir(parents=True)
    (shared / ".git" / "config").write_text("[core]\n")
    (shared / ".vscode").mkdir()
    (shared / ".mcp.json").write_text("{}")
    return shared


@LAYERS
@pytest.mark.requirement("I8")
async def test_a_server_cannot_plant_git_hooks_git_config_or_mcp_configs_in_a_folder_it_may_write(
    world: dict[str, Path], repository: Path, errlog: TextIO, mount_layer: bool
) -> None:
    planted = [
        repository / ".git" / "hooks" / "pre-commit",
        repository / ".git" / "config",
        repository / ".vscode" / "mcp.json",
        repository / ".mcp.json",
    ]
    policy = policy_for(sys.executable, [str(PROBE)], home=world["home"], shared=[repository], tmp=world["tmp"])
    async with sandboxed_client(
        policy,
        sys.executable,
        [str(PROBE)],
        home=world["home"],
        cwd=repository,
        errlog=errlog,
        mount_layer=mount_layer,
    ) as client:
        outcomes = await tool(
            client, "probe", write=[*map(str, planted), str(repository / "notes.md"), str(repository / ".git" / "x")]
        )

    results = {o["path"]: o for o in outcomes}
    assert results[str(repository / "notes.md")]["ok"], "the rest of the folder stays writable"
    assert results[str(repository / ".git" / "x")]["ok"], "git can still write its own files"
    if mount_layer:
        for path in planted:
            assert results[str(path)]["errno"] == errno.EROFS, path
        assert (repository / ".git" / "config").read_text() == "[core]\n"
        assert not (repository / ".git" / "hooks" / "pre-commit").exists()
    else:
        found = {c.name: c for c in channels(policy, mount_layer=False)}
        assert found["plantedFiles"].state == "notConfined"
        assert str(repository) in found["plantedFiles"].sentence


@pytest.mark.requirement("I9")
async def test_a_folder_shared_read_only_is_readable_and_every_write_there_is_refused(
    world: dict[str, Path], errlog: TextIO
) -> None:
    docs = world["outside"] / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("guide")
    policy = policy_for(
        sys.executable, [str(PROBE)], home=world["home"], shared=[world["shared"]], read_only=[docs], tmp=world["tmp"]
    )
    async with sandboxed_client(
        policy, sys.executable, [str(PROBE)], home=world["home"], cwd=world["outside"], errlog=errlog
    ) as client:
        read, write, replace, listing = await tool(
            client,
            "probe",
            read=[str(docs / "guide.md")],
            list=[str(docs)],
            write=[str(docs / "new.md"), str(docs / "guide.md")],
        )

    assert read["ok"] and listing["ok"]
    assert write["errno"] == errno.EACCES and replace["errno"] == errno.EACCES
    assert (docs / "guide.md").read_text() == "guide" and not (docs / "new.md").exists()
    assert "shared read only" in policy.summary
