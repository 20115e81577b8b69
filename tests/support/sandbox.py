"""Start real MCP servers under a sandbox policy and talk to them with the SDK client.

``sandboxed_client`` starts what :func:`host_bridge.sandbox.apply.sandboxed_launch` says (a ``preexec_fn`` that
applies Landlock, or the runner command), the way the hub's stdio transport will: the SDK's ``stdio_client`` takes
no ``preexec_fn``, so the process is started here and its stdout framed with the hub's own line reader.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

import anyio
import anyio.lowlevel
from mcp import Client

from host_bridge.hub.stdio_transport import LineReader, LineWriter, Streams
from host_bridge.jsonrpc_lines import LineSplitter
from host_bridge.sandbox.apply import SandboxedLaunch, sandboxed_launch
from host_bridge.sandbox.policy import SandboxPolicy, policy_for_launch
from host_bridge.sandbox.support import supported

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "tests" / "servers"
PEERS = ROOT / "tests" / "peers" / "node_modules" / "@modelcontextprotocol"


def landlock_reason() -> str:
    """Why the Landlock tests are skipped here (empty when they run)."""
    ok, reason = supported()
    return "" if ok and sys.platform.startswith("linux") else reason


def node() -> str:
    """The resolved ``node`` the reference servers run on."""
    found = shutil.which("node")
    assert found, "the reference MCP servers need Node.js on PATH"
    return found


def policy_for(
    command: str,
    args: Sequence[str],
    *,
    home: Path,
    shared: Sequence[Path] = (),
    tmp: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    enforce: bool = True,
    allowed_read: Sequence[Path] = (),
    read_only: Sequence[Path] = (),
    network: bool = True,
    unix_sockets: bool = False,
) -> SandboxPolicy:
    """The default policy for a launch, with ``home`` as the user's home (and ``HOME`` in the environment)."""
    return policy_for_launch(
        command,
        args,
        cwd=cwd,
        env=server_env(home, env),
        shared_folders=shared,
        home=home,
        private_tmp=tmp,
        enforce=enforce,
        allowed_read=allowed_read,
        read_only_folders=read_only,
        network=network,
        unix_sockets=unix_sockets,
    )


def server_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with ``HOME`` set to ``home``."""
    return {**os.environ, "HOME": str(home), **(extra or {})}


@asynccontextmanager
async def launched_stdio(launch: SandboxedLaunch, *, cwd: Path, errlog: TextIO) -> AsyncGenerator[Streams]:
    """Start ``launch`` and exchange newline-delimited JSON-RPC with it; close stdin and reap it at the end."""
    backend = anyio.lowlevel.get_async_backend()  # pyright: ignore[reportPrivateImportUsage]
    process = await backend.open_process(
        [launch.command, *launch.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog.fileno(),
        cwd=cwd,
        env=launch.env,
        start_new_session=True,
        preexec_fn=launch.preexec_fn,
    )
    assert process.stdin is not None and process.stdout is not None
    read_stream = LineReader(process.stdout, LineSplitter())
    try:
        yield read_stream, LineWriter(process.stdin, on_broken=read_stream.close)
    finally:
        await process.stdin.aclose()
        with anyio.move_on_after(5):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


@asynccontextmanager
async def sandboxed_client(
    policy: SandboxPolicy,
    command: str,
    args: Sequence[str],
    *,
    home: Path,
    cwd: Path,
    errlog: TextIO,
    use_runner: bool = False,
    mount_layer: bool | None = None,
    env: Mapping[str, str] | None = None,
) -> AsyncGenerator[Client]:
    """An SDK client connected to ``command args`` started under ``policy`` (``mount_layer``: see
    :func:`~host_bridge.sandbox.apply.sandboxed_launch`; ``env`` is added to the environment)."""
    launch = sandboxed_launch(
        policy, command, args, server_env(home, env), use_runner=use_runner, mount_layer=mount_layer
    )
    async with Client(launched_stdio(launch, cwd=cwd, errlog=errlog), mode="legacy", read_timeout_seconds=30) as c:
        yield c
