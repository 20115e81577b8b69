"""Benchmark one truth across windows with the sandbox on: how fast a revoke reaches a server, and how fast the
restart that enforces it is done.

Two sidecars (``python -m host_bridge serve``, two editor windows) share one storage folder and run the same
fixture server (``tests/servers/roots_recorder.py``) over the same two folders, both shared, under the default
sandbox (Landlock). Each round shares the second folder again, then window B denies it with ``hostBridge/setConsent``.
Two times are measured from the revoke, each until window A's server reports (on its stderr, forwarded to window A's
log) that it fetched the reduced list:

* **list_changed**: the running server was told (``notifications/roots/list_changed``) and fetched its new roots,
  before anything else: the revoke is felt at once (target ≤ 50 ms same-window);
* **restart complete**: the server was restarted under the narrower sandbox (a Landlock ruleset cannot change) and
  the new process fetched its roots (target ≤ 1 s same-window on an idle machine).

The baseline is the same revoke sent to window A itself, measured in the same run. Prints medians of 10. Beside the
restart figure, the anchor it cannot beat: the same server started bare (no hub, no sandbox) until it asks for its
roots, measured in the same run — what is left above it is host_bridge's own (stopping the old process, the sandbox).

Run: ``.venv/bin/python bench/consent.py [--repeat 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from host_bridge.hosts.lsp.rpc import raw_json_converter
from host_bridge.uris import canonical_path, path_to_uri

SERVERS = Path(__file__).resolve().parents[1] / "tests" / "servers"
WAIT = 60.0


class Window(LanguageClient):
    """One editor window: allows every folder it is asked about, keeps its log lines with their arrival time."""

    def __init__(self) -> None:
        super().__init__("bench-window", "1.0", converter_factory=raw_json_converter)
        self.lines: list[tuple[float, str]] = []
        self.arrived = asyncio.Event()

        @self.feature(types.WINDOW_LOG_MESSAGE)  # pyright: ignore[reportUntypedFunctionDecorator]
        def log_message(ls: Window, params: types.LogMessageParams) -> None:
            ls.lines.append((time.perf_counter(), params.message))
            ls.arrived.set()

        @self.feature("hostBridge/serverChanged")  # pyright: ignore[reportUntypedFunctionDecorator]
        def server_changed(ls: Window, params: dict[str, Any]) -> None: ...

        @self.feature("hostBridge/askConsent")  # pyright: ignore[reportUntypedFunctionDecorator]
        def ask_consent(ls: Window, params: dict[str, Any]) -> dict[str, Any]:
            return {"decisions": [{"uri": r["uri"], "decision": "allow"} for r in params["roots"]]}

    async def open(self, storage: Path, folders: list[Path], record: Path) -> None:
        await self.start_io(sys.executable, "-m", "host_bridge", "serve")  # pyright: ignore[reportUnknownMemberType]
        assert self._server is not None and self._server.stderr is not None
        stderr = self._server.stderr
        self._drain = asyncio.ensure_future(_drain(stderr))
        args = [str(SERVERS / "roots_recorder.py"), "--pin", "2025-11-25"]
        options = {
            "storageDir": str(storage),
            "servers": {"rec": {"type": "stdio", "command": sys.executable, "args": args}},
            "readWorkspaceConfig": False,
        }
        capabilities = types.ClientCapabilities(experimental={"hostBridge": {"consentUi": True}})
        folders_ = [types.WorkspaceFolder(uri=path_to_uri(canonical_path(f)), name=f.name) for f in folders]
        await self.initialize_async(
            types.InitializeParams(
                capabilities=capabilities, workspace_folders=folders_, initialization_options=options
            )
        )
        self.initialized(types.InitializedParams())

    async def until_line(self, wanted: str, after: int) -> float:
        """When the first log line equal to ``wanted`` at index ``after`` or later arrived."""
        async with asyncio.timeout(WAIT):
            while True:
                for when, line in self.lines[after:]:
                    if line == wanted:
                        return when
                self.arrived.clear()
                await self.arrived.wait()

    def index_after(self, when: float) -> int:
        """The index of the first log line that arrived after ``when``."""
        return next((i for i, (at, _) in enumerate(self.lines) if at > when), len(self.lines))

    async def set_consent(self, uri: str, decision: str) -> None:
        params = {"server": "rec", "uri": uri, "decision": decision}
        await self.protocol.send_request_async("hostBridge/setConsent", params)

    async def close(self) -> None:
        await asyncio.wait_for(self.shutdown_async(None), WAIT)
        self.exit(None)
        await asyncio.wait_for(self.stop(), WAIT)
        await self._drain


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


async def revoke_times(window_a: Window, revoker: Window, uri: str, repeat: int) -> list[tuple[float, float]]:
    """Revoke the shared ``uri`` through ``revoker``; time until window A's server has one folder (told), and until
    the restarted server has it too (enforced); share it again before the next round."""
    times: list[tuple[float, float]] = []
    for _ in range(repeat):
        mark = len(window_a.lines)
        start = time.perf_counter()
        await revoker.set_consent(uri, "deny")
        told = await window_a.until_line("[rec] roots: 1", mark)
        restarted = await window_a.until_line("[rec] roots: 1", window_a.index_after(told))
        times.append((told - start, restarted - start))
        mark = len(window_a.lines)
        await revoker.set_consent(uri, "allow")
        # Told first (the old process fetches both), then restarted (the new one fetches both): wait for both.
        first = await window_a.until_line("[rec] roots: 2", mark)
        await window_a.until_line("[rec] roots: 2", window_a.index_after(first))
    return times


async def bare_start(repeat: int) -> list[float]:
    """Seconds from spawning the fixture server bare (no hub, no sandbox) to its first ``roots/list`` request."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {"listChanged": True}},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    times: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SERVERS / "roots_recorder.py"),
            "--pin",
            "2025-11-25",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(init).encode() + b"\n")
        await asyncio.wait_for(process.stdout.readline(), WAIT)
        process.stdin.write(json.dumps(initialized).encode() + b"\n")
        asked = json.loads(await asyncio.wait_for(process.stdout.readline(), WAIT))
        assert asked.get("method") == "roots/list", asked
        times.append(time.perf_counter() - start)
        process.kill()
        await process.wait()
    return times


async def run(repeat: int) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    with tempfile.TemporaryDirectory(prefix="hb-bench-consent-") as temp:
        work = Path(temp)
        folders = [work / "alpha", work / "beta"]
        for folder in folders:
            folder.mkdir()
        storage = work / "storage"
        window_a, window_b = Window(), Window()
        await window_a.open(storage, folders, work / "roots.jsonl")
        await window_a.until_line("[rec] roots: 2", 0)
        await window_b.open(storage, folders, work / "roots.jsonl")
        await window_b.until_line("[rec] roots: 2", 0)
        beta = path_to_uri(canonical_path(folders[1]))
        try:
            cross = await revoke_times(window_a, window_b, beta, repeat)
            same = await revoke_times(window_a, window_a, beta, repeat)
        finally:
            await window_b.close()
            await window_a.close()
        return cross, same


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    cross, same = asyncio.run(run(args.repeat))
    bare = statistics.median(asyncio.run(bare_start(args.repeat)))
    median: Callable[[list[float]], float] = statistics.median
    for name, index, target in (("list_changed", 0, 0.05), ("restart complete", 1, 1.0)):
        same_ms, cross_ms = median([t[index] for t in same]), median([t[index] for t in cross])
        verdict = "ok" if same_ms <= target else "MISSED"
        print(
            f"revoke → {name} (sandbox on): same-window {same_ms * 1000:.1f} ms, cross-window {cross_ms * 1000:.1f} ms "
            f"(median of {args.repeat}; ratio {cross_ms / same_ms:.2f}; target ≤ {target * 1000:g} ms) {verdict}"
        )
    same_restart = median([t[1] for t in same])
    print(
        f"anchor: the server's own start, bare, until it asks for roots: {bare * 1000:.1f} ms "
        f"(median of {args.repeat}); "
        f"restart complete is {same_restart / bare:.2f}× it, {(same_restart - bare) * 1000:.0f} ms above it"
    )


if __name__ == "__main__":
    main()
