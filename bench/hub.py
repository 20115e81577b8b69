"""Benchmark the hub against the bare SDK doing the same work, in the same run (median of 5).

(a) roots round trip: 20 connected stdio servers; one consent change per server; time until every server
    was told ``roots/list_changed`` and fetched its new roots — through the hub (registry, consent, audit)
    divided by the same notification round trip done directly with SDK sessions. Target ≤ 1.5.
(b) listing: 3 servers × 10 000 resources through ``hub/resources/`` (aggregated, paged) divided by
    walking the same pages directly with the SDK. Target ≤ 1.3. The hub keeps each server's list: the listing is
    timed right after each server said its list changed (so the hub fetches it anew while the listing reads it),
    and again from the kept lists.

Run: ``.venv/bin/python bench/hub.py [--servers 20] [--resources 10000] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client, MCPDeprecationWarning
from mcp.client.stdio import StdioServerParameters, stdio_client
from sdk_baseline import walk_resources

from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.policy import Decision
from host_bridge.core import CoreSettings, open_core
from host_bridge.hub.config import load_servers
from host_bridge.hub.launch import Launch
from host_bridge.hub.models import ServerStatus
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.roots import Root
from host_bridge.sandbox.refusals import Refusal
from host_bridge.uris import canonical_path, path_to_uri
from host_bridge.workspace.models import Candidate

SERVERS = Path(__file__).resolve().parents[1] / "tests" / "servers"
PIN = "2025-11-25"


class Quiet:
    """Hub events nobody listens to in a benchmark."""

    def server_changed(self, status: ServerStatus) -> None: ...
    def server_log(self, server_id: str, line: str) -> None: ...
    def resources_changed(self, server_id: str) -> None: ...
    def resource_updated(self, server_id: str, uri: str) -> None: ...
    def notice(self, server_id: str | None, message: str) -> None: ...
    def sandbox_refused(self, server_id: str, refusal: Refusal) -> None: ...


class AnswerClock:
    """Stands in for the audit log: notes when each server's roots answer contained the wanted folder."""

    def __init__(self) -> None:
        self.wanted: str | None = None
        self.done: set[str] = set()
        self.all_done = anyio.Event()
        self.expected = 0

    def append(self, identity: ServerIdentity, protocol_version: str | None, roots: Sequence[Root]) -> None:
        if self.wanted is not None and any(r.uri == self.wanted for r in roots):
            self.done.add(identity.server_id)
            if len(self.done) == self.expected:
                self.all_done.set()

    def append_launch(self, identity: ServerIdentity, launch: Launch) -> None:
        """Launches are not what this benchmark times."""


def recorder_args(record_dir: Path, index: int) -> list[str]:
    return [str(SERVERS / "roots_recorder.py"), "--pin", PIN, "--record", str(record_dir / f"{index}.jsonl")]


async def hub_round_trips(count: int, repeat: int, work: Path) -> list[float]:
    folders = [work / f"folder-{i}" for i in range(repeat)]
    for folder in folders:
        folder.mkdir()
    entries = {f"s{i}": {"command": sys.executable, "args": recorder_args(work, i)} for i in range(count)}
    servers = load_servers(entries, []).servers
    clock = AnswerClock()
    times: list[float] = []
    # The recorders write their records outside the folders shared with them: no OS sandbox (as in the tests).
    settings = CoreSettings(connection=ConnectionSettings(sandbox="off"), roots_poll_interval=None)
    async with open_core(work / "storage", Quiet(), settings=settings, audit=clock) as core:  # type: ignore[arg-type]
        hub, policy = core.hub, core.policy
        core.registry.set_candidates(
            [Candidate(uri=path_to_uri(canonical_path(f)), name=f.name, kinds=("workspaceFolder",)) for f in folders]
        )
        await hub.configure(servers)
        with anyio.fail_after(60):
            while not all(c.state.value == "running" for c in hub.connections):
                await anyio.sleep(0.05)
            await anyio.sleep(0.5)  # let every server fetch its initial roots
        for folder in folders:
            clock.wanted, clock.done, clock.all_done, clock.expected = (
                path_to_uri(canonical_path(folder)),
                set(),
                anyio.Event(),
                count,
            )
            start = time.perf_counter()
            for server in servers:
                policy.set(server.identity, canonical_path(folder), Decision.ALLOW_SESSION)
            with anyio.fail_after(60):
                await clock.all_done.wait()
            times.append(time.perf_counter() - start)
    return times


async def direct_round_trips(count: int, repeat: int, work: Path) -> list[float]:
    roots: list[types.Root] = []
    answered: set[int] = set()
    all_done = anyio.Event()
    wanted: list[str] = [""]

    def callback(index: int):
        async def list_roots(context: object) -> types.ListRootsResult:
            if any(str(r.uri) == wanted[0] for r in roots):
                answered.add(index)
                if len(answered) == count:
                    all_done.set()
            return types.ListRootsResult(roots=list(roots))

        return list_roots

    times: list[float] = []
    with open(work / "direct-stderr.log", "w") as errlog:
        async with AsyncExitStack() as stack:
            clients: list[Client] = []
            for i in range(count):
                params = StdioServerParameters(command=sys.executable, args=recorder_args(work, 1000 + i))
                client = Client(stdio_client(params, errlog=errlog), mode="auto", list_roots_callback=callback(i))
                clients.append(await stack.enter_async_context(client))
            await anyio.sleep(0.5)
            for n in range(repeat):
                folder = work / f"direct-{n}"
                folder.mkdir()
                uri = path_to_uri(canonical_path(folder))
                answered.clear()
                all_done = anyio.Event()
                wanted[0] = uri
                start = time.perf_counter()
                roots.append(types.Root(uri=uri, name=folder.name))  # pyright: ignore[reportArgumentType]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    sends = [c.session.send_roots_list_changed() for c in clients]  # pyright: ignore[reportDeprecated]
                async with anyio.create_task_group() as tasks:
                    for send in sends:
                        tasks.start_soon(_await, send)
                with anyio.fail_after(60):
                    await all_done.wait()
                times.append(time.perf_counter() - start)
    return times


async def _await(awaitable: Awaitable[None]) -> None:
    await awaitable


def resources_args(count: int) -> list[str]:
    return [str(SERVERS / "resources_server.py"), "--count", str(count), "--page-size", "500", "--pin", PIN]


async def hub_listing(servers: int, count: int, repeat: int, work: Path) -> tuple[list[float], list[float]]:
    """Times of listing everything right after a list change (fetched anew), and from the kept lists."""
    entries = {f"r{i}": {"command": sys.executable, "args": resources_args(count)} for i in range(servers)}
    anew: list[float] = []
    kept: list[float] = []
    settings = CoreSettings(roots_poll_interval=None)
    async with open_core(work / "storage-list", Quiet(), settings=settings) as core:
        hub = core.hub
        await hub.configure(load_servers(entries, []).servers)
        with anyio.fail_after(60):
            while not all(c.state.value == "running" for c in hub.connections):
                await anyio.sleep(0.05)
        for _ in range(repeat):
            for server in entries:
                hub.broker.handle_notification(server, types.ResourceListChangedNotification())
            for times in (anew, kept):
                start = time.perf_counter()
                total, cursor = 0, None
                while True:
                    page = await hub.broker.list_resources(cursor=cursor)
                    total += len(page.items)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                times.append(time.perf_counter() - start)
                assert total == servers * count, total
    return anew, kept


async def direct_listing(servers: int, count: int, repeat: int, work: Path) -> list[float]:
    times: list[float] = []
    with open(work / "direct-list-stderr.log", "w") as errlog:
        async with AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(
                    Client(
                        stdio_client(
                            StdioServerParameters(command=sys.executable, args=resources_args(count)), errlog=errlog
                        ),
                        mode="auto",
                    )
                )
                for _ in range(servers)
            ]
            totals: list[int] = []

            async def walk(client: Client) -> None:
                totals.append(await walk_resources(client))

            for _ in range(repeat):
                totals.clear()
                start = time.perf_counter()
                async with anyio.create_task_group() as tasks:
                    for client in clients:
                        tasks.start_soon(walk, client)
                times.append(time.perf_counter() - start)
                assert sum(totals) == servers * count
    return times


def report(label: str, ours: list[float], baseline: list[float], target: float) -> None:
    a, b = statistics.median(ours), statistics.median(baseline)
    verdict = "ok" if a / b <= target else "over target"
    detail = f"median of {len(ours)}; hub {a * 1000:.1f} ms, sdk {b * 1000:.1f} ms; target ≤ {target}"
    print(f"{label}: {a / b:.2f} ({detail}) {verdict}")


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="hb-bench-hub-") as tmp:
        work = Path(tmp)
        hub_times = await hub_round_trips(args.servers, args.repeat, work)
        sdk_times = await direct_round_trips(args.servers, args.repeat, work)
        report(f"roots list_changed round trip, {args.servers} servers", hub_times, sdk_times, 1.5)
        hub_anew, hub_kept = await hub_listing(3, args.resources, args.repeat, work)
        sdk_list = await direct_listing(3, args.resources, args.repeat, work)
        report(f"listing 3 × {args.resources} resources, fetched anew", hub_anew, sdk_list, 1.3)
        report(f"listing 3 × {args.resources} resources, kept", hub_kept, sdk_list, 1.3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=20)
    parser.add_argument("--resources", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    anyio.run(main, parser.parse_args())
