"""Benchmark agents through the gateway (``host-bridge attach``) against the SDK calling the server directly.

Two measurements, each through ``attach`` and direct, the runs alternating so drift on a shared machine hits both:

- ``tools/call`` round trip of the fixture's ``echo`` tool, 1 000 calls each way after a warm-up; median. Target
  attach / direct ≤ 1.15.
- listing 10 000 resources in one page (``resources/list``), ``--lists`` times each way; median. Target ≤ 1.1.

Beside the wall-clock ratios it prints the sidecar process's CPU time per request through ``attach`` (user + system,
from ``/proc``; the direct calls do not touch the sidecar), which a loaded machine disturbs much less.

The agent is the ``mcp`` SDK's ``Client`` in both cases (handshake era, as VS Code and Claude Code speak it); the
server is ``tests/servers/tools_server.py`` pinned to 2025-11-25. The sidecar's side (core, hub, gateway) runs in its
own process, as in an editor, so the agent's event loop is not shared with it. The agent starts ``attach`` with pipes,
as agents do, so ``attach`` hands them to the gateway: the path measured is agent → sidecar → server and back.

Each line gives the medians and the 90th percentiles, and what ``attach`` adds to the median in absolute terms.

Run: ``.venv/bin/python bench/gateway.py [--calls 1000] [--lists 15]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
SERVER = [sys.executable, str(ROOT / "tests" / "servers" / "tools_server.py"), "--pin", "2025-11-25"]
RESOURCES = 10_000


async def sidecar(storage: str, workspace: str) -> None:
    """The sidecar's side: core, gateway and the fixture server, until stdin closes."""
    from host_bridge.core import CoreSettings, open_core
    from host_bridge.gateway.service import Gateway
    from host_bridge.hub.config import load_servers

    class Quiet:
        def server_changed(self, status: object) -> None: ...
        def server_log(self, server_id: str, line: str) -> None: ...
        def resources_changed(self, server_id: str) -> None: ...
        def resource_updated(self, server_id: str, uri: str) -> None: ...
        def notice(self, server_id: str | None, message: str) -> None: ...
        def sandbox_refused(self, server_id: str, refusal: Any) -> None: ...

    servers = load_servers({"bench": {"command": SERVER[0], "args": [*SERVER[1:], "--count", str(RESOURCES)]}}, [])
    async with open_core(storage, Quiet(), settings=CoreSettings(roots_poll_interval=None)) as core:
        gateway = Gateway(core.hub, storage, folders=lambda: [workspace])
        await core.tasks.start(gateway.serve)
        await core.hub.configure(servers.servers)
        await gateway.running("bench")
        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(
    calls: int, lists: int, storage: str, workspace: str, sidecar_pid: int
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Round trips and listings, alternating between the two clients (seconds each), and the sidecar's CPU seconds per
    request through ``attach``."""
    direct = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], "--count", str(RESOURCES)])
    attach = StdioServerParameters(
        command=sys.executable,
        args=["-m", "host_bridge", "attach", "bench", "--workspace", workspace, "--storage-dir", storage],
        env=dict(os.environ),
    )
    times: dict[str, list[float]] = {"call direct": [], "call attach": [], "list direct": [], "list attach": []}
    async with Client(direct, mode="legacy") as plain, Client(attach, mode="legacy") as bridged:
        clients = {"direct": plain, "attach": bridged}
        for client in clients.values():
            for _ in range(50):
                await client.call_tool("echo", {"text": "warm"})
            await client.list_resources(cache_mode="bypass")
        cpu: dict[str, float] = {}
        before = cpu_seconds(sidecar_pid)
        for index in range(calls):
            for name, client in clients.items() if index % 2 else reversed(clients.items()):
                start = time.perf_counter()
                await client.call_tool("echo", {"text": "hello"})
                times[f"call {name}"].append(time.perf_counter() - start)
        cpu["call"] = (cpu_seconds(sidecar_pid) - before) / calls
        before = cpu_seconds(sidecar_pid)
        for index in range(lists):
            for name, client in clients.items() if index % 2 else reversed(clients.items()):
                start = time.perf_counter()
                listing = await client.list_resources(cache_mode="bypass")
                times[f"list {name}"].append(time.perf_counter() - start)
                assert len(listing.resources) == RESOURCES
        cpu["list"] = (cpu_seconds(sidecar_pid) - before) / lists
    return times, cpu


def main() -> int:
    """Run the benchmark and print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000, help="tools/call round trips each way (default 1000)")
    parser.add_argument("--lists", type=int, default=15, help="listings of 10 000 resources each way (default 15)")
    parser.add_argument("--sidecar", nargs=2, metavar=("STORAGE", "WORKSPACE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sidecar:
        anyio.run(sidecar, *args.sidecar)
        return 0
    with tempfile.TemporaryDirectory(prefix="hb-bench-") as temporary:
        storage, workspace = os.path.join(temporary, "s"), os.path.join(temporary, "ws")
        os.makedirs(workspace)
        env = {**os.environ, "XDG_DATA_HOME": os.path.join(temporary, "data")}
        os.environ["XDG_DATA_HOME"] = env["XDG_DATA_HOME"]
        helper = subprocess.Popen(
            [sys.executable, __file__, "--sidecar", storage, workspace],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        try:
            assert helper.stdout is not None
            if helper.stdout.readline().strip() != b"ready":
                print("the sidecar side did not start", file=sys.stderr)
                return 1
            times, cpu = anyio.run(measure, args.calls, args.lists, storage, workspace, helper.pid)
        finally:
            assert helper.stdin is not None
            helper.stdin.close()
            helper.wait(timeout=30)
    medians = {name: statistics.median(values) for name, values in times.items()}
    p90 = {name: statistics.quantiles(values, n=10)[-1] for name, values in times.items()}
    call_ratio = medians["call attach"] / medians["call direct"]
    list_ratio = medians["list attach"] / medians["list direct"]
    print(
        f"tools/call round trip, median of {args.calls}: direct {medians['call direct'] * 1e3:.3f} ms, "
        f"attach {medians['call attach'] * 1e3:.3f} ms (+{(medians['call attach'] - medians['call direct']) * 1e6:.0f} "
        f"µs), ratio {call_ratio:.2f} (target ≤ 1.15); p90 direct {p90['call direct'] * 1e3:.3f} ms, "
        f"attach {p90['call attach'] * 1e3:.3f} ms; sidecar CPU {cpu['call'] * 1e6:.0f} µs per call"
    )
    print(
        f"resources/list of {RESOURCES}, median of {args.lists}: direct {medians['list direct'] * 1e3:.1f} ms, "
        f"attach {medians['list attach'] * 1e3:.1f} ms, ratio {list_ratio:.2f} (target ≤ 1.1); "
        f"p90 direct {p90['list direct'] * 1e3:.1f} ms, attach {p90['list attach'] * 1e3:.1f} ms; "
        f"sidecar CPU {cpu['list'] * 1e3:.1f} ms per listing"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
