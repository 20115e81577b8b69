"""``host-bridge serve``: the composition root of the sidecar and its stdio entry point.

:data:`SIDECAR` says what the shell (:class:`~host_bridge.hosts.lsp.server.HostBridgeServer`) runs after
``initialized``: the core as the editor's options say, and every feature in order
(:func:`host_bridge.hosts.lsp.features.create_features`), both reached through :mod:`~host_bridge.hosts.lsp.deferred`
so that ``initialize`` is answered before pydantic and the core are imported. :func:`create_server` makes the shell
with it and the standard handlers (:mod:`~host_bridge.hosts.lsp.lifecycle`); :func:`run_stdio` runs it on stdio.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from typing import NoReturn

from lsprotocol import types

from host_bridge.hosts.lsp import deferred, lifecycle
from host_bridge.hosts.lsp.server import Composition, HostBridgeServer

logger = logging.getLogger(__name__)


SIDECAR = Composition(load=deferred.load, open_core=deferred.open_core, create_features=deferred.create_features)
"""The sidecar: the core over the editor's storage folder with its events sent to the editor, and every feature."""


def create_server(composition: Composition = SIDECAR) -> HostBridgeServer:
    """The sidecar as the editor first meets it: the shell with its standard handlers and one handler per request of
    the message table; ``composition`` makes the core and the features after ``initialized``."""
    server = HostBridgeServer(composition)
    lifecycle.register(server)
    return server


class _EditorLogHandler(logging.Handler):
    """Forwards warnings and errors of ``host_bridge`` to the editor's log."""

    def __init__(self, server: HostBridgeServer) -> None:
        super().__init__(logging.WARNING)
        self._server = server
        self._busy = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._busy, "active", False):
            return
        self._busy.active = True
        try:
            kind = types.MessageType.Error if record.levelno >= logging.ERROR else types.MessageType.Warning
            self._server.log_to_editor(kind, record.getMessage())
        except Exception:
            self.handleError(record)
        finally:
            self._busy.active = False


def run_stdio() -> NoReturn:
    """``host-bridge serve``: LSP on stdin/stdout until the editor goes away."""
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    # Nothing but LSP frames may reach the editor: stray prints and inherited descriptors go to stderr.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    server = create_server()
    handler = _EditorLogHandler(server)
    logging.getLogger("host_bridge").addHandler(handler)
    code = 1
    try:
        code = asyncio.run(server.serve(sys.stdin.buffer, protocol_out))
    except KeyboardInterrupt:
        code = 0
    except Exception:
        logger.exception("the sidecar failed")
    finally:
        deferred.kill_server_groups()
        logging.getLogger("host_bridge").removeHandler(handler)
        with contextlib.suppress(OSError):
            protocol_out.flush()
        sys.stderr.flush()
    # The stdin reader thread may still be blocked in read(); every MCP server is stopped already (and os._exit
    # skips atexit hooks, so the last kill above is the one that counts).
    os._exit(code)
