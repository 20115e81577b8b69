"""Benchmark the editor sidecar (``python -m host_bridge serve``) against bare baselines, in one run (median of 5).

(a) spawn → ``initialize`` answer of the sidecar divided by the same for a bare pygls server that registers
    nothing. Target ≤ 1.10.
(b) listing 3 × 10 000 resources (pages of 500) through ``hostBridge/listResources``, following ``nextCursor``,
    divided by walking the same three servers concurrently with the SDK. Target ≤ 1.5. Also the time to the
    first page as a fraction of the whole listing through the sidecar. Target ≤ 0.10.
(c) reading a blob of 12 MiB (16 MiB of base64, within the broker's 16 MiB decoded cap) through
    ``hostBridge/readResource`` divided by a direct SDK read. Target ≤ 2.0. Also the sidecar's peak RSS growth
    (``VmHWM``) over the 16 MiB on the wire. Target ≤ 3.

The editor side is pygls' ``LanguageClient`` over stdio. Times are printed, never asserted.

Run: ``.venv/bin/python bench/sidecar.py [--repeat 5] [--resources 10000] [--blob-mib 12]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from lsprotocol import types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from pygls.lsp.client import LanguageClient
from sdk_baseline import walk_resources

from host_bridge.hosts.lsp.rpc import raw_json_converter

SERVERS = Path(__file__).resolve().parents[1] / "tests" / "servers"
PIN = "2025-11-25"
BIG_BLOB_URI = "test://blob/big"
BARE_SERVER = """
from pygls.lsp.server import LanguageServer

LanguageServer("bare", "1.0").start_io()
"""
WAIT = 120.0


class Editor(LanguageClient):
    """A pygls client standing in for the editor: keeps server states, drains the sidecar's stderr."""

    def __init__(self) -> None:
        super().__init__("bench-editor", "1.0", converter_factory=raw_json_converter)
        self.states: dict[str, str] = {}
        self.changed = asyncio.Event()
        self._drain: asyncio.Task[None] | None = None

        @self.feature("hostBridge/serverChanged")  # pyright: ignore[reportUntypedFunctionDecorator]
        def server_changed(ls: Editor, params: dict[str, Any]) -> None:
            ls.states[params["id"]] = params["state"]
            ls.changed.set()

        @self.feature(types.WINDOW_LOG_MESSAGE)  # pyright: ignore[reportUntypedFunctionDecorator]
        def log_message(ls: Editor, params: types.LogMessageParams) -> None: ...

    async def spawn(self, *command: str) -> None:
        await self.start_io(*command)  # pyright: ignore[reportUnknownMemberType]
        assert self._server is not None and self._server.stderr is not None
        stderr = self._server.stderr

        async def drain() -> None:
            while await stderr.read(65536):
                pass

        self._drain = asyncio.ensure_future(drain())

    @property
    def pid(self) -> int:
        assert self._server is not None
        return self._server.pid

    async def until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT):
            while not condition():
                self.changed.clear()
                await self.changed.wait()

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        return await self.protocol.send_request_async(method, params)

    async def close(self) -> None:
        if self._server is not None and self._server.returncode is None:
            await asyncio.wait_for(self.shutdown_async(None), WAIT)
            self.exit(None)
        await asyncio.wait_for(self.stop(), WAIT)
        if self._drain is not None:
            await self._drain


async def sidecar(work: Path, servers: dict[str, list[str]]) -> Editor:
    """A sidecar with ``servers`` (id → resources_server arguments), initialized, every server running."""
    editor = Editor()
    await editor.spawn(sys.executable, "-m", "host_bridge", "serve")
    entries = {
        server_id: {"type": "stdio", "command": sys.executable, "args": [str(SERVERS / "resources_server.py"), *args]}
        for server_id, args in servers.items()
    }
    options = {"storageDir": str(work / "storage"), "servers": entries, "readWorkspaceConfig": False}
    await editor.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), initialization_options=options)
    )
    editor.initialized(types.InitializedParams())
    await editor.until(lambda: all(editor.states.get(server_id) == "running" for server_id in servers))
    return editor


# (a) start-up.


async def initialize_time(*command: str) -> float:
    editor = Editor()
    start = time.perf_counter()
    await editor.spawn(*command)
    await editor.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    elapsed = time.perf_counter() - start
    await editor.close()
    return elapsed


async def startup(repeat: int, work: Path) -> tuple[list[float], list[float]]:
    bare = work / "bare_server.py"
    bare.write_text(BARE_SERVER)
    ours: list[float] = []
    baseline: list[float] = []
    await initialize_time(sys.executable, str(bare))  # warm the file cache for both
    await initialize_time(sys.executable, "-m", "host_bridge", "serve")
    for _ in range(repeat):
        ours.append(await initialize_time(sys.executable, "-m", "host_bridge", "serve"))
        baseline.append(await initialize_time(sys.executable, str(bare)))
    return ours, baseline


# (b) listing.


def listing_args(count: int) -> list[str]:
    return ["--count", str(count), "--page-size", "500", "--pin", PIN]


async def sidecar_listing(count: int, repeat: int, work: Path) -> tuple[list[float], list[float]]:
    editor = await sidecar(work, {f"r{i}": listing_args(count) for i in range(3)})
    totals: list[float] = []
    firsts: list[float] = []
    try:
        for _ in range(repeat):
            start = time.perf_counter()
            items, cursor, first = 0, None, None
            while True:
                page = await editor.request("hostBridge/listResources", {"cursor": cursor} if cursor else {})
                first = first if first is not None else time.perf_counter() - start
                items += len(page["items"])
                cursor = page.get("nextCursor")
                if cursor is None:
                    break
            totals.append(time.perf_counter() - start)
            firsts.append(first)
            assert items == 3 * count, items
    finally:
        await editor.close()
    return totals, firsts


async def direct_listing(count: int, repeat: int, work: Path) -> list[float]:
    times: list[float] = []
    params = StdioServerParameters(
        command=sys.executable, args=[str(SERVERS / "resources_server.py"), *listing_args(count)]
    )
    with open(work / "direct-list-stderr.log", "w") as errlog:
        async with AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(Client(stdio_client(params, errlog=errlog), mode="auto"))
                for _ in range(3)
            ]
            for _ in range(repeat):
                start = time.perf_counter()
                totals = await asyncio.gather(*(walk_resources(client) for client in clients))
                times.append(time.perf_counter() - start)
                assert sum(totals) == 3 * count
    return times


# (c) reading a big blob.


def high_water_mark(pid: int) -> int:
    """Peak resident set size of ``pid`` in bytes (``VmHWM``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


async def sidecar_reads(blob_mib: float, repeat: int, work: Path) -> tuple[list[float], int, int]:
    editor = await sidecar(work, {"big": ["--fault", "big-blob", "--big-mb", str(blob_mib), "--pin", PIN]})
    times: list[float] = []
    try:
        before = high_water_mark(editor.pid)
        size = 0
        for _ in range(repeat):
            start = time.perf_counter()
            result = await editor.request("hostBridge/readResource", {"server": "big", "uri": BIG_BLOB_URI})
            times.append(time.perf_counter() - start)
            size = len(result["contents"][0]["blob"])
            del result
        after = high_water_mark(editor.pid)
    finally:
        await editor.close()
    return times, after - before, size


async def direct_reads(blob_mib: float, repeat: int) -> tuple[list[float], int]:
    """Direct SDK reads and the peak RSS growth of the process doing them; run in a fresh child process
    (``--direct-read-child``) so that its peak is not hidden by this one's."""
    times: list[float] = []
    args = [str(SERVERS / "resources_server.py"), "--fault", "big-blob", "--big-mb", str(blob_mib), "--pin", PIN]
    with open(os.devnull, "w") as errlog:
        params = StdioServerParameters(command=sys.executable, args=args)
        async with Client(stdio_client(params, errlog=errlog), mode="auto") as client:
            before = high_water_mark(os.getpid())
            for _ in range(repeat):
                start = time.perf_counter()
                result = await client.read_resource(BIG_BLOB_URI)
                times.append(time.perf_counter() - start)
                assert result.contents
                del result
            growth = high_water_mark(os.getpid()) - before
    return times, growth


async def direct_reads_in_child(blob_mib: float, repeat: int) -> tuple[list[float], int]:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--direct-read-child",
        "--blob-mib",
        str(blob_mib),
        "--repeat",
        str(repeat),
        stdout=asyncio.subprocess.PIPE,
    )
    output, _ = await child.communicate()
    answer = json.loads(output)
    return answer["times"], answer["growth"]


def ratio_line(label: str, ours: list[float], baseline: list[float], target: float, names: tuple[str, str]) -> str:
    a, b = statistics.median(ours), statistics.median(baseline)
    verdict = "ok" if a / b <= target else "over target"
    detail = f"median of {len(ours)}; {names[0]} {a * 1000:.1f} ms, {names[1]} {b * 1000:.1f} ms; target ≤ {target}"
    return f"{label}: {a / b:.2f} ({detail}) {verdict}"


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="hb-bench-sidecar-") as tmp:
        work = Path(tmp)
        ours, bare = await startup(args.repeat, work)
        print(ratio_line("initialize/bare-pygls", ours, bare, 1.10, ("sidecar", "bare pygls")), flush=True)

        totals, firsts = await sidecar_listing(args.resources, args.repeat, work)
        direct = await direct_listing(args.resources, args.repeat, work)
        label = f"listing 3 × {args.resources}/direct-sdk"
        print(ratio_line(label, totals, direct, 1.5, ("sidecar", "sdk")), flush=True)
        fraction = statistics.median(firsts) / statistics.median(totals)
        verdict = "ok" if fraction <= 0.10 else "over target"
        print(
            f"first page/full listing: {fraction:.3f} (median of {args.repeat}; first page"
            f" {statistics.median(firsts) * 1000:.1f} ms of {statistics.median(totals) * 1000:.1f} ms;"
            f" target ≤ 0.10) {verdict}",
            flush=True,
        )

        reads, growth, size = await sidecar_reads(args.blob_mib, args.repeat, work)
        direct_read, direct_growth = await direct_reads_in_child(args.blob_mib, args.repeat)
        label = f"read {size / 2**20:.0f} MiB blob/direct-sdk"
        print(ratio_line(label, reads, direct_read, 2.0, ("sidecar", "sdk")), flush=True)
        rss = growth / size
        verdict = "ok" if rss <= 3 else "over target"
        print(
            f"peak RSS growth/blob: {rss:.2f} (sidecar VmHWM +{growth / 2**20:.1f} MiB over {args.repeat} reads of"
            f" {size / 2**20:.1f} MiB base64; a bare SDK client grows {direct_growth / size:.2f} ×,"
            f" +{direct_growth / 2**20:.1f} MiB; target ≤ 3) {verdict}",
            flush=True,
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--resources", type=int, default=10_000)
    parser.add_argument("--blob-mib", type=float, default=12.0)
    parser.add_argument("--direct-read-child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.direct_read_child:
        times, growth = asyncio.run(direct_reads(arguments.blob_mib, arguments.repeat))
        print(json.dumps({"times": times, "growth": growth}))
    else:
        asyncio.run(main(arguments))
