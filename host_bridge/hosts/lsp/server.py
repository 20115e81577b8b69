"""The sidecar's shell: the pygls server that answers ``initialize`` at once, owns the core's lifetime and the
features, and runs the stdio main loop.

:class:`HostBridgeServer` registers one handler for every editor → sidecar request of the message table
(:mod:`host_bridge.hosts.lsp.messages`), each answered by :func:`host_bridge.hosts.lsp.feature.answer`. What it runs
is given to it: a :class:`Composition` (the sidecar's is in :mod:`host_bridge.hosts.lsp.main`) loads the core, opens
it and makes the features; after ``initialized`` the shell calls it, registers the features and calls their hooks.
It keeps what the editor said (folders, options, capabilities) and sends the editor what the features and the core
have to say. Where pygls' own protocol is overridden: :mod:`host_bridge.hosts.lsp.rpc`.

Nothing here imports pydantic or the core at module level: ``initialize`` is answered before they are loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from host_bridge import __version__
from host_bridge.hosts.lsp import deferred, messages
from host_bridge.hosts.lsp.feature import Feature, answer, handlers
from host_bridge.hosts.lsp.framing import FrameReader, FramingError, chunk_reader
from host_bridge.hosts.lsp.rpc import HostBridgeProtocol, raw_json_converter
from host_bridge.hub.errors import SERVER_NOT_RUNNING
from host_bridge.system import IS_WINDOWS

if TYPE_CHECKING:
    from pydantic import BaseModel

    from host_bridge.core import Core
    from host_bridge.hosts.lsp.protocol import InitializationOptions

logger = logging.getLogger(__name__)

P = TypeVar("P", bound="BaseModel")
FeatureT = TypeVar("FeatureT", bound=Feature)

NOT_READY = SERVER_NOT_RUNNING
"""Code of a request that arrives before the core could start (it shares the "server not running" code)."""
READY_TIMEOUT = 60.0
"""Seconds a request waits for the core's first start (detection and server configs) before failing."""
STOP_TIMEOUT = 4.0
"""Seconds the core gets to stop every MCP server when the editor goes away; a server's own stop sequence
(``host_bridge.hub.stdio_transport.STOP_SECONDS``) fits in it, and whatever is left after it gets SIGKILL."""
EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP) if not IS_WINDOWS else ()
"""Signals that end the sidecar like ``exit`` does (stopping every MCP server first), with 128 + the signal number."""


@dataclass(frozen=True)
class Composition:
    """What the shell runs after ``initialized``: the sidecar's (:data:`host_bridge.hosts.lsp.main.SIDECAR`), or a
    test's small one. Every callable is called once, in this order."""

    load: Callable[[], None]
    """Import what the other two need; called in a worker thread (it may take most of a second)."""
    open_core: Callable[[HostBridgeServer], AbstractAsyncContextManager[Core]]
    """The core, open for as long as the context lasts (the shell's core task owns it)."""
    create_features: Callable[[HostBridgeServer, Core], Sequence[Feature]]
    """Every feature, in the order their hooks run."""


class HostBridgeServer(LanguageServer):
    """The sidecar: LSP and ``hostBridge/*`` on one side, the core and the features on the other."""

    def __init__(self, composition: Composition) -> None:
        super().__init__(  # pyright: ignore[reportUnknownMemberType]  (pygls leaves a parameter untyped)
            "host-bridge", __version__, protocol_cls=HostBridgeProtocol, converter_factory=raw_json_converter
        )
        self.composition = composition
        """What runs after ``initialized``: the core and the features."""
        self.raw_options: object = None
        """``initializationOptions`` as the editor sent them."""
        self._options: InitializationOptions | None = None
        self._folders: dict[str, str | None] = {}
        """The editor's workspace folders, URI → name, in its order (a change is as cheap with 10 000 of them)."""
        self.consent_ui = False
        """The editor answers ``hostBridge/askConsent`` (else ``window/showMessageRequest`` is used)."""
        self.core: Core | None = None
        """The core, once it is open and the features exist."""
        self.ready = asyncio.Event()
        """Set once the core started and the first detection and configuration are applied."""
        self.exit_code = 0
        """What the process exits with."""
        self._features: dict[type[Feature], Feature] = {}
        self._handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {}
        self._waiting: list[Callable[[Feature], None]] | None = []
        """Editor events that came before the features existed, replayed to them in order (``None`` after)."""
        self._exit = asyncio.Event()
        self._stop = asyncio.Event()
        self._core_task: asyncio.Task[None] | None = None
        self._shutting_down: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._loop_thread: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        for message in messages.MESSAGES:
            if _handled_here(message):
                self.feature(message.method)(self._answerer(cast(messages.Request[Any, Any], message)))

    def _answerer(self, message: messages.Request[Any, Any]) -> Callable[[Any], Coroutine[Any, Any, object]]:
        async def handle(params: Any) -> object:
            return await answer(self, message, params)

        return handle

    @property
    def options(self) -> InitializationOptions:
        """The validated ``initializationOptions``; a bad value is logged once and replaced by its default.

        Validated on first use (in ``initialized``), so answering ``initialize`` does not wait for pydantic.
        """
        if self._options is None:
            self._options, problems = deferred.initialization_options(self.raw_options)
            for problem in problems:
                logger.warning("%s", problem)
        return self._options

    # Features.

    def add_feature(self, feature: FeatureT) -> FeatureT:
        """Register ``feature`` (one per type) and the requests it handles."""
        kind = type(feature)
        if kind in self._features:
            raise ValueError(f"a {kind.__name__} is registered already")
        for message, handler in handlers(feature):
            if message.method in self._handlers:
                raise ValueError(f"{message.method} has a handler already")
            self._handlers[message.method] = handler
        self._features[kind] = feature
        return feature

    def get_feature(self, kind: type[FeatureT]) -> FeatureT | None:
        """The registered feature of type ``kind``, if any."""
        feature = self._features.get(kind)
        return feature if isinstance(feature, kind) else None

    @property
    def folders(self) -> list[tuple[str, str | None]]:
        """The editor's workspace folders as ``(uri, name)``, in its order."""
        return list(self._folders.items())

    @folders.setter
    def folders(self, folders: Iterable[tuple[str, str | None]]) -> None:
        self._folders = dict(folders)

    def change_folders(self, added: Iterable[tuple[str, str | None]], removed: Iterable[str]) -> None:
        """``workspace/didChangeWorkspaceFolders``: ``removed`` (URIs) are closed, then ``added`` ones not open yet are
        appended; the cost is that of the change, not of the whole workspace (editors send bursts of them)."""
        for uri in removed:
            self._folders.pop(uri, None)
        for uri, name in added:
            self._folders.setdefault(uri, name)

    def handler(self, message: messages.Request[Any, Any]) -> Callable[[Any], Awaitable[Any]]:
        """The registered handler of an editor → sidecar request; a JSON-RPC error while there is none."""
        handler = self._handlers.get(message.method)
        if handler is None:
            raise JsonRpcException("the sidecar failed to start; see its log", NOT_READY)
        return handler

    def _handles(self, message: messages.Message) -> bool:
        return message.method in self._handlers

    def to_features(self, event: Callable[[Feature], None], *, replay: bool = True) -> None:
        """Pass an editor event to every feature, in order; before they exist, keep it for them (``replay``)."""
        if self._waiting is not None:
            if replay:
                self._waiting.append(event)
            return
        for feature in list(self._features.values()):
            try:
                event(feature)
            except Exception:
                logger.exception("%s failed to take an event", type(feature).__name__)

    # Core lifetime.

    def start_core(self) -> None:
        """Load the core and the features (in a worker thread: the loop keeps answering), open the core in a
        long-lived task on this loop, make the features and start them; it stays open until :meth:`stop_core`."""

        async def own() -> None:
            composition = self.composition
            await asyncio.to_thread(composition.load)
            try:
                async with composition.open_core(self) as core:
                    for feature in composition.create_features(self, core):
                        self.add_feature(feature)
                    waiting, self._waiting = self._waiting or [], None
                    for event in waiting:
                        self.to_features(event)
                    missing = [m.method for m in messages.MESSAGES if _handled_here(m) and not self._handles(m)]
                    if missing:
                        logger.error("no feature handles %s", ", ".join(missing))
                    self.core = core
                    for feature in list(self._features.values()):
                        await feature.initialized()
                    self.ready.set()
                    await self._stop.wait()
            finally:
                self.ready.set()

        self._core_task = self.spawn(own(), name="host-bridge core")

    @property
    def core_started(self) -> bool:
        """Whether :meth:`start_core` ran already (it runs once per sidecar)."""
        return self._core_task is not None

    def begin_shutdown(self) -> None:
        """``shutdown``: start :meth:`shut_down` in the background and return, so the editor gets its answer at once;
        the main loop's end (``exit``, end of input) waits for the stop to finish (:meth:`stop_core`)."""
        if self._shutting_down is None:
            self._shutting_down = self.spawn(self.shut_down(), name="shutdown")

    async def shut_down(self) -> None:
        """``shutdown``: every feature's hook, then stop the core."""
        for feature in list(self._features.values()):
            try:
                await feature.shutdown()
            except Exception:
                logger.exception("%s failed to shut down", type(feature).__name__)
        await self.stop_core()

    async def stop_core(self) -> None:
        """Stop every MCP server (children included); bounded by :data:`STOP_TIMEOUT`, after which whatever is
        left of every server's process group gets SIGKILL."""
        self._stop.set()
        task = self._core_task
        if task is not None and not task.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT)
        deferred.kill_server_groups()

    async def core_within(self, seconds: float) -> Core | None:
        """The core after at most ``seconds`` of waiting for the workspace to be applied, or ``None`` if it does not
        exist yet (still loading, or failed)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ready.wait(), seconds)
        return self.core

    async def ready_core(self) -> Core:
        """The core once it started and applied the workspace; a JSON-RPC error if it cannot."""
        if self.core is None and self._core_task is None:
            raise JsonRpcException("the sidecar is not initialized yet; send initialize/initialized first", NOT_READY)
        try:
            await asyncio.wait_for(self.ready.wait(), READY_TIMEOUT)
        except TimeoutError:
            raise JsonRpcException("the sidecar is still starting; try again", NOT_READY) from None
        if self.core is None:
            raise JsonRpcException("the sidecar failed to start; see its log", NOT_READY)
        return self.core

    def spawn(self, coroutine: Coroutine[Any, Any, None], *, name: str) -> asyncio.Task[None]:
        """Run ``coroutine`` as an owned background task whose failure is logged, not lost."""
        task = asyncio.ensure_future(coroutine)
        task.set_name(name)
        self._background.add(task)

        def done(finished: asyncio.Task[None]) -> None:
            self._background.discard(finished)
            if not finished.cancelled() and (error := finished.exception()) is not None:
                logger.error("%s failed", name, exc_info=error)

        task.add_done_callback(done)
        return task

    def request_exit(self, code: int) -> None:
        """End the main loop: stop the core, then exit with ``code``."""
        self.exit_code = code
        self._exit.set()

    # Messages to the editor.

    def notify_editor(self, message: messages.Notification[P], params: P) -> None:
        """Send a ``hostBridge/*`` notification."""
        self.protocol.notify(message.method, cast(Any, params).to_wire())

    async def request_editor(self, message: messages.Request[P, Any], params: P, timeout: float) -> object:
        """Send a ``hostBridge/*`` request and return its raw result (validate it with the table's result model);
        raises ``TimeoutError`` after ``timeout`` seconds, or whatever the editor's error answer raises."""
        return await asyncio.wait_for(
            self.protocol.send_request_async(message.method, cast(Any, params).to_wire()), timeout
        )

    def log_to_editor(self, kind: types.MessageType, message: str) -> None:
        """``window/logMessage``; safe to call from any thread."""
        params = types.LogMessageParams(type=kind, message=message)
        loop = self._loop
        if loop is None or threading.get_ident() == self._loop_thread:
            self.window_log_message(params)
        elif not loop.is_closed():
            loop.call_soon_threadsafe(self.window_log_message, params)

    def show_to_user(self, kind: types.MessageType, message: str) -> None:
        """``window/showMessage``: something the user should see now, not only in the log."""
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    # Main loop.

    async def serve(self, stdin: BinaryIO, stdout: BinaryIO) -> int:
        """Speak LSP over the given streams until ``exit`` or end of input; then stop the core."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._stop_event = threading.Event()
        reading_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lsp-stdin")
        self.protocol.set_writer(StdoutWriter(stdout))
        reading = asyncio.ensure_future(self._read_messages(FrameReader(chunk_reader(stdin, reading_pool))))
        exiting = asyncio.ensure_future(self._exit.wait())
        handled = self._handle_exit_signals()
        try:
            await asyncio.wait({reading, exiting}, return_when=asyncio.FIRST_COMPLETED)
            if reading.done() and not exiting.done():
                if (error := reading.exception()) is None:
                    logger.info("the editor closed the connection; stopping")
                elif isinstance(error, FramingError):
                    logger.error("%s", error)
                    self.exit_code = 1
                else:
                    logger.error("reading from the editor failed; stopping", exc_info=error)
                    self.exit_code = 1
        finally:
            self._stop_event.set()
            await self.stop_core()
            for number in handled:
                self._loop.remove_signal_handler(number)
            exiting.cancel()
            reading.cancel()
            reading_pool.shutdown(wait=False, cancel_futures=True)
        return self.exit_code

    def _handle_exit_signals(self) -> list[int]:
        """Let :data:`EXIT_SIGNALS` end the main loop like ``exit``; the signals handled (none off the main thread)."""
        loop = self._loop
        if loop is None or threading.current_thread() is not threading.main_thread():
            return []

        def on_signal(number: int) -> None:
            logger.info("received signal %d; stopping every MCP server, then exiting", number)
            self.request_exit(128 + number)

        handled: list[int] = []
        for number in EXIT_SIGNALS:
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.add_signal_handler(number, on_signal, int(number))
                handled.append(number)
        return handled

    async def _read_messages(self, reader: FrameReader) -> None:
        """Hand every message from the editor to the protocol until the end of input."""
        receiver = cast(HostBridgeProtocol, self.protocol)
        while (body := await reader.next_body()) is not None:
            try:
                receiver.receive(body)
            except Exception as error:
                self.report_server_error(error, JsonRpcException)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log failures of the message loop with their traceback."""
        logger.error("LSP message handling failed: %s", error, exc_info=error)


def _handled_here(message: messages.Message) -> bool:
    return isinstance(message, messages.Request) and message.direction is messages.Direction.TO_SIDECAR
