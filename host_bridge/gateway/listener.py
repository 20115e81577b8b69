"""The gateway's socket: where it listens and registers, who it admits, and how a session is handed its descriptors.

:class:`Listener` opens the socket (an abstract one where the kernel can scope those, else a ``0600`` file; see
:mod:`host_bridge.gateway.registry`), writes the sidecar's registry entry with its secret, and accepts connections
until cancelled. Each connection is admitted in steps (:mod:`host_bridge.gateway.admission`): this user's, not a
server's process, a hello line within ``hello_timeout`` that carries the secret. The :class:`SessionSource` (the
gateway) then opens a session for the server the hello names, or refuses it; the session runs on the connection
itself, or, when ``attach`` hands them over, on the agent's own stdin and stdout (one byte carrying two descriptors),
and the connection then only tells ``attach`` how the session ended.

Whatever happens on one connection ends that connection at most; running out of descriptors only pauses accepting,
and past ``max_pending_hellos`` connections waiting for their hello, new ones are closed at once.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, cast

import anyio
import anyio.abc
import anyio.to_thread
from pydantic import ValidationError

from host_bridge.gateway import admission, registry
from host_bridge.gateway.hello import MAX_HELLO_BYTES, Hello, HelloAnswer, SessionEnd
from host_bridge.gateway.settings import GatewaySettings
from host_bridge.gateway.streams import HelloError, read_hello
from host_bridge.hub import process_groups

logger = logging.getLogger(__name__)

ACCEPT_RETRY = 0.1
"""Seconds before accepting again when the process is out of descriptors."""
REGISTER_QUIET = 0.1
"""Seconds without a folder change before the registry entries are rewritten (a burst of changes is one write)."""
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class Refused(Exception):
    """A hello the gateway turns away; :attr:`answer` says why to ``attach``."""

    def __init__(self, answer: HelloAnswer) -> None:
        super().__init__(answer.error)
        self.answer = answer
        """What ``attach`` is answered."""


class RunnableSession(Protocol):
    """What the listener needs of an agent session it admitted."""

    @property
    def id(self) -> str:
        """Names the session in the audit log."""
        ...

    @property
    def agent_closed(self) -> bool:
        """Whether the session ended because the agent closed its side (once it ended)."""
        ...

    @property
    def reason(self) -> str:
        """Why the session ended (once it ended)."""
        ...

    async def run(
        self, read_fd: int, write_fd: int, pending: bytes, *, control: anyio.abc.ByteReceiveStream | None = None
    ) -> None:
        """Serve the agent on two non-blocking descriptors until either side closes."""
        ...


class SessionSource(Protocol):
    """Who opens the sessions of admitted connections: the gateway."""

    async def open_session(self, hello: Hello, peer_uid: int | None) -> RunnableSession:
        """A session with the server ``hello`` names; raises :class:`Refused` when there is none to have."""
        ...

    def refused(self, hello: Hello, peer_uid: int | None, reason: str) -> None:
        """Record a refused connection (the audit log)."""
        ...

    def advice(self, server_id: str) -> str | None:
        """A sentence for the user of an admitted session with ``server_id`` (``attach`` prints it), if any."""
        ...


class Listener:
    """The socket agents connect to, and the admission of each connection."""

    def __init__(
        self,
        storage_dir: str,
        settings: GatewaySettings,
        sessions: SessionSource,
        *,
        folders: Callable[[], Sequence[str]] = lambda: (),
    ) -> None:
        self.storage_dir = storage_dir
        """Where the registry entries (and the socket file, when there is one) live."""
        self.settings = settings
        """Time-outs and limits in force."""
        self.socket_path: str | None = None
        """The socket's file, while listening (``None`` for an abstract socket)."""
        self.address: str | None = None
        """Where it listens, as its registry entry says (a path, or ``@name`` for an abstract socket), while
        listening."""
        self.waiting_for_hello = 0
        """Connections that have not sent their hello yet."""
        self._sessions = sessions
        self._folders = folders
        self._secret = admission.new_secret()
        self._entry: registry.SidecarEntry | None = None
        self._entry_files: list[Path] = []
        self._turning_away = False
        self._folders_changed = anyio.Event()

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled; ``task_status.started()`` once agents can connect and find this sidecar. On the way
        out the socket and the registry entries are removed."""
        abstract = self.settings.abstract_socket
        if abstract is None:
            abstract = admission.abstract_sockets_scoped()
        gateway_dir = registry.private_dir(registry.gateway_dir(self.storage_dir))
        path: Path | None = None
        if abstract:
            address = registry.abstract_name(os.getpid())
            listener = await anyio.create_unix_listener(registry.connect_address(address))
        else:
            path = registry.socket_path(self.storage_dir, os.getpid())
            registry.private_dir(path.parent)
            registry.remove_files([path])
            listener = await anyio.create_unix_listener(path)
            os.chmod(path, 0o600)
            address = str(path)
        self.address = address
        self.socket_path = None if path is None else str(path)
        try:
            async with listener, anyio.create_task_group() as tasks:
                folders, headless = self._folders(), self.settings.headless
                self._entry = registry.new_entry(
                    os.getpid(), address, self.storage_dir, folders, self._secret, headless=headless
                )
                self._entry_files = registry.write_entry(self._entry, registry.entry_dirs(self.storage_dir))
                logger.info("the gateway listens on %s (registered in %s)", address, gateway_dir)
                task_status.started()
                tasks.start_soon(self._keep_registered, name="gateway registry entry")
                await self._accept_all(listener, tasks)
        finally:
            registry.remove_files([*self._entry_files, *([path] if path is not None else [])])
            self._entry_files = []
            self._entry = None
            self.socket_path = None
            self.address = None

    def folders(self) -> list[str]:
        """The workspace folders it registers under (real paths)."""
        return [os.path.realpath(f) for f in self._folders()]

    def folders_changed(self) -> None:
        """The workspace folders changed: the registry entries are rewritten under the new ones, so ``attach`` finds
        this sidecar by them, once the changes pause for ``REGISTER_QUIET`` seconds, in a worker thread."""
        self._folders_changed.set()

    async def _keep_registered(self) -> None:
        """Rewrite the entries after each burst of folder changes: the folders are read once per burst, and resolved
        and written off the event loop (thousands of folders, changed thousands of times, never hold it up)."""
        while True:
            await self._folders_changed.wait()
            while True:
                self._folders_changed = anyio.Event()
                with anyio.move_on_after(REGISTER_QUIET) as quiet:
                    await self._folders_changed.wait()
                if quiet.cancelled_caught:
                    break
            entry = self._entry
            if entry is None:
                continue
            given = list(self._folders())
            written = await anyio.to_thread.run_sync(self._rewrite, entry, given)
            if written is not None:
                self._entry, self._entry_files = written

    def _rewrite(
        self, entry: registry.SidecarEntry, given: list[str]
    ) -> tuple[registry.SidecarEntry, list[Path]] | None:
        """``entry`` under the real paths of ``given``, written; ``None`` when those are its folders already."""
        folders = tuple(os.path.realpath(f) for f in given)
        if folders == entry.folders:
            return None
        entry = entry.model_copy(update={"folders": folders})
        return entry, registry.write_entry(entry, registry.entry_dirs(self.storage_dir))

    async def _accept_all(self, listener: anyio.abc.SocketListener, tasks: anyio.abc.TaskGroup) -> None:
        """Accept connections until cancelled; running out of descriptors only pauses accepting."""
        exhausted = False
        while True:
            try:
                stream = await listener.accept()
            except anyio.BrokenResourceError as error:
                cause = error.__cause__
                if not isinstance(cause, OSError) or cause.errno not in _OUT_OF_DESCRIPTORS:
                    raise
                if not exhausted:
                    logger.warning("the gateway cannot accept connections for now: %s", cause.strerror or cause)
                exhausted = True
                # The pending connection stays queued until a descriptor is free: try again shortly.
                await anyio.sleep(ACCEPT_RETRY)
                continue
            exhausted = False
            if not self._admit():
                # Closing a connection that was never read from or written to does not wait for the peer.
                await stream.aclose()
                continue
            tasks.start_soon(self._accept, stream)

    def _admit(self) -> bool:
        """Count a new connection among those waiting for their hello; ``False`` (it is to be closed at once) when
        ``max_pending_hellos`` are waiting already, said in the log once per burst."""
        limit = self.settings.max_pending_hellos
        if self.waiting_for_hello < limit:
            self.waiting_for_hello += 1
            self._turning_away = False
            return True
        if not self._turning_away:
            logger.warning(
                "the gateway closes new connections at once: %d connections have not sent their hello yet "
                "(they have %g seconds each)",
                limit,
                self.settings.hello_timeout,
            )
        self._turning_away = True
        return False

    async def _accept(self, stream: anyio.abc.SocketStream) -> None:
        """Serve one connection; whatever an agent or a server does there ends that connection at most."""
        try:
            await self._serve_connection(stream)
        except Exception:
            logger.exception("an agent connection to the gateway failed")

    async def _serve_connection(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                peer = admission.peer_of(stream.extra(anyio.abc.SocketAttribute.raw_socket))
                peer_uid = None if peer is None else peer.uid
                if not admission.is_own_user(peer):
                    logger.warning("refused a gateway connection from user id %d", peer_uid)
                    return
                group = None if peer is None else admission.server_group_of(peer.pid, process_groups.live_groups())
                with anyio.fail_after(self.settings.hello_timeout):
                    line, pending = await read_hello(stream, MAX_HELLO_BYTES)
                hello = Hello.model_validate_json(line)
            except (HelloError, TimeoutError, ValidationError) as error:
                reason = "no hello line in time" if isinstance(error, TimeoutError) else str(error).splitlines()[0]
                await _answer(stream, HelloAnswer(ok=False, reason="badHello", error=f"not a gateway hello: {reason}"))
                return
            finally:
                self.waiting_for_hello -= 1
            refusal = self._refusal(hello, peer, group)
            if refusal is not None:
                logger.warning("[%s] refused a gateway connection: %s", hello.server, refusal)
                self._sessions.refused(hello, peer_uid, refusal)
                await _answer(stream, HelloAnswer(ok=False, reason="refused", error=f"MCP Host Bridge: {refusal}"))
                return
            try:
                session = await self._sessions.open_session(hello, peer_uid)
            except Refused as refused:
                await _answer(stream, refused.answer)
                return
            if not hello.handover:
                advice = self._sessions.advice(hello.server)
                await _answer(stream, HelloAnswer(ok=True, session=session.id, advice=advice))
                fd = stream.extra(anyio.abc.SocketAttribute.raw_socket).fileno()
                await session.run(fd, fd, pending)
                return
            advice = self._sessions.advice(hello.server)
            await _answer(stream, HelloAnswer(ok=True, session=session.id, handover=True, advice=advice))
            try:
                with anyio.fail_after(self.settings.hello_timeout):
                    agent_in, agent_out = await receive_stdio(cast(anyio.abc.UNIXSocketStream, stream), pending)
            except (OSError, anyio.EndOfStream, anyio.BrokenResourceError, ValueError, RuntimeError) as error:
                logger.warning("[%s] attach did not hand over its stdin and stdout: %s", hello.server, error)
                return
            try:
                await session.run(agent_in, agent_out, b"", control=stream)
            finally:
                os.close(agent_in)
                os.close(agent_out)
            end = SessionEnd(agent_closed=session.agent_closed, reason=None if session.agent_closed else session.reason)
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await stream.send(end.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n")

    def _refusal(self, hello: Hello, peer: admission.Peer | None, group: int | None) -> str | None:
        """Why this connection may not use the gateway (see :mod:`host_bridge.gateway.admission`), or ``None``."""
        if group is not None:
            assert peer is not None
            return (
                f"process {peer.pid} was started by an MCP server (process group {group}); MCP servers cannot reach "
                "other servers through the gateway"
            )
        if not admission.secret_matches(hello.secret, self._secret):
            return (
                "the connection did not present this sidecar's secret; start the server with `host-bridge attach` of "
                "the same MCP Host Bridge as the sidecar"
            )
        return None


async def receive_stdio(stream: anyio.abc.UNIXSocketStream, pending: bytes) -> tuple[int, int]:
    """The agent's stdin and stdout, handed over by ``attach``: two pipes or sockets, made non-blocking.

    Raises ``ValueError`` (after closing whatever arrived) when anything else came.
    """
    if pending:
        raise ValueError("it sent more than its hello line")
    # Room for one more than expected: when fewer fit, the kernel closes the rest unseen and two would look right.
    _message, fds = await stream.receive_fds(1, 3)
    try:
        if len(fds) != 2:
            raise ValueError(f"it sent {len(fds)} descriptors instead of its stdin and stdout")
        for fd in fds:
            mode = os.fstat(fd).st_mode
            if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                raise ValueError("its stdin or stdout is neither a pipe nor a socket")
            os.set_blocking(fd, False)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds[0], fds[1]


async def _answer(stream: anyio.abc.ByteStream, answer: HelloAnswer) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(answer.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n")
