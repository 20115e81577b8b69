"""The sidecar's shell and a test editor in one process, over two pipes: the in-process tier of the LSP features.

The shell is the real one (:func:`host_bridge.hosts.lsp.main.create_server`, the same framing, overrides and
``answer``) and so are the features; only the composition is the test's: :func:`small_core` opens the real core over
the test's storage without the background watchers a test does not need (the consent file's watcher, the roots'
poll). No process is started unless the test configures an MCP server, so a test runs in milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async

from host_bridge.hosts.lsp import deferred
from host_bridge.hosts.lsp.main import create_server
from host_bridge.hosts.lsp.server import Composition, HostBridgeServer
from support.sidecar import WAIT, BridgeClient


@contextlib.asynccontextmanager
async def _small_core(server: HostBridgeServer) -> AsyncGenerator[object]:
    from host_bridge.core import CoreSettings, open_core
    from host_bridge.hosts.lsp.features.events import EditorEvents
    from host_bridge.hub.settings import ConnectionSettings

    options = server.options
    assert options.storage_dir is not None, "an in-process sidecar needs storageDir in its options"
    settings = CoreSettings(
        connection=ConnectionSettings(sandbox=options.sandbox), roots_poll_interval=None, watch_store=False
    )
    async with open_core(options.storage_dir, EditorEvents(server), settings=settings) as core:
        yield core


SMALL_CORE = Composition(
    load=deferred.load,
    open_core=_small_core,  # pyright: ignore[reportArgumentType]
    create_features=deferred.create_features,
)
"""The real core and features over the test's storage, without the consent file's watcher and the roots' poll."""


@dataclass
class InProcess:
    """A running in-process sidecar and its test editor."""

    client: BridgeClient
    """The test editor (records what the sidecar sends; answers prompts as the test says)."""
    server: HostBridgeServer
    """The sidecar's shell, to look at its features."""


@contextlib.asynccontextmanager
async def in_process(composition: Composition = SMALL_CORE) -> AsyncIterator[InProcess]:
    """A sidecar made by ``composition`` and a :class:`BridgeClient` speaking LSP to it over pipes; on exit the
    client shuts the session down (or the server is told to exit) and the pipes are closed."""
    to_server_read, to_server_write = os.pipe()
    to_client_read, to_client_write = os.pipe()
    server_in, server_out = os.fdopen(to_server_read, "rb"), os.fdopen(to_client_write, "wb")
    client_in, client_out = os.fdopen(to_client_read, "rb"), os.fdopen(to_server_write, "wb")
    server = create_server(composition)
    serving = asyncio.ensure_future(server.serve(server_in, server_out))
    client = BridgeClient.create()
    client.protocol.set_writer(StdoutWriter(client_out))
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="test-editor")
    stop = client._stop_event  # pyright: ignore[reportPrivateUsage]
    reading = asyncio.ensure_future(
        run_async(stop_event=stop, reader=StdinAsyncReader(client_in, pool), protocol=client.protocol)
    )
    try:
        yield InProcess(client, server)
    finally:
        try:
            if client.capabilities is not None and not serving.done():
                await asyncio.wait_for(client.shutdown_session(), WAIT)
            else:
                server.request_exit(0)
            await asyncio.wait_for(serving, WAIT)
        finally:
            stop.set()
            for stream in (client_out, server_out, server_in):
                with contextlib.suppress(OSError):
                    stream.close()
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reading
            client_in.close()
            pool.shutdown(wait=False, cancel_futures=True)
