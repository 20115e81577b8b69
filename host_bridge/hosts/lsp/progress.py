"""Work-done progress (``$/progress``) under a token the editor passed with its request.

A request whose table entry has a ``progress`` title is answered inside a :class:`WorkDone` (opened by
:func:`host_bridge.hosts.lsp.feature.answer` before it waits for the core); its handler reports through
:func:`current`.
"""

from __future__ import annotations

from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer


class WorkDone:
    """``begin`` on entry, :meth:`report` in between, ``end`` on exit (also when cancelled or failed).

    Silent unless the editor declared ``window.workDoneProgress`` and passed a ``workDoneToken``. pygls'
    ``work_done_progress`` is not used: it keeps every token it ever saw.
    """

    def __init__(self, server: HostBridgeServer | None, token: int | str | None, title: str) -> None:
        window = server.client_capabilities.window if server is not None else None
        enabled = token is not None and window is not None and window.work_done_progress is True
        self._server = server
        self._token = token if enabled else None
        self._title = title
        self.outcome: str | None = None
        """The ``end`` message; set it before leaving the block (else the end says why the work stopped)."""

    def __enter__(self) -> WorkDone:
        self._send(types.WorkDoneProgressBegin(title=self._title, cancellable=False))
        self._previous = _current.set(self)
        return self

    def report(self, message: str) -> None:
        """What is being done now."""
        self._send(types.WorkDoneProgressReport(message=message))

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        _current.reset(self._previous)
        if self.outcome is None:
            self.outcome = "done" if kind is None else "failed" if issubclass(kind, Exception) else "cancelled"
        self._send(types.WorkDoneProgressEnd(message=self.outcome))

    def _send(
        self, value: types.WorkDoneProgressBegin | types.WorkDoneProgressReport | types.WorkDoneProgressEnd
    ) -> None:
        if self._token is not None and self._server is not None:
            self._server.protocol.notify(types.PROGRESS, types.ProgressParams(token=self._token, value=value))


_current: ContextVar[WorkDone | None] = ContextVar("host_bridge_work_done", default=None)


def current() -> WorkDone:
    """The progress of the request being answered (a silent one outside a request with a progress title)."""
    return _current.get() or WorkDone(None, None, "")
