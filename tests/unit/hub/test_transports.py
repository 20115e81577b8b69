"""The transport seam: one transport per kind a config can name, chosen once; the connection never asks which."""

from __future__ import annotations

import ast
import errno
import sys
from pathlib import Path
from typing import Any, get_args

from host_bridge.consent.fingerprint import TransportKind
from host_bridge.hub import connection
from host_bridge.hub.config import SHARED_FOLDERS, ServerConfig, load_servers
from host_bridge.hub.launch import planned_sandbox
from host_bridge.hub.settings import ConnectionSettings
from host_bridge.hub.transports import transport_for
from host_bridge.hub.transports.http import HttpTransport
from host_bridge.hub.transports.stdio import StdioTransport

ENTRIES: dict[str, dict[str, Any]] = {
    "stdio": {"type": "stdio", "command": sys.executable, "args": ["-c", "pass"]},
    "http": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"Authorization": "secret"}},
}


def config(entry: dict[str, Any]) -> ServerConfig:
    loaded = load_servers({"srv": entry}, [])
    assert not loaded.problems, loaded.problems
    return loaded.servers[0]


def test_every_transport_kind_a_config_can_name_has_a_transport_chosen_from_the_config() -> None:
    assert sorted(ENTRIES) == sorted(get_args(TransportKind))
    chosen = {kind: type(transport_for(config(entry), ConnectionSettings())) for kind, entry in ENTRIES.items()}
    assert chosen == {"stdio": StdioTransport, "http": HttpTransport}


def test_the_connection_never_names_a_transport_kind() -> None:
    source = Path(connection.__file__).read_text(encoding="utf-8")
    kinds = set(get_args(TransportKind))
    named = [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and node.value in kinds
    ]
    assert named == [], f"hub/connection.py branches on a transport kind; ask its Transport instead: {named}"


def test_a_command_that_cannot_run_is_a_permanent_failure_naming_it_and_where_it_is_defined() -> None:
    missing = FileNotFoundError(errno.ENOENT, "No such file or directory")
    stdio = StdioTransport(config(ENTRIES["stdio"]), ConnectionSettings())
    assert stdio.permanent_failure(missing) == (
        f"cannot start {sys.executable!r}: No such file or directory; check the command in settings"
    )
    assert stdio.permanent_failure(ConnectionError("reset")) is None
    assert HttpTransport(config(ENTRIES["http"]), ConnectionSettings()).permanent_failure(missing) is None


def test_before_its_first_start_a_stdio_server_has_no_launch_and_its_sandbox_is_the_one_planned_here() -> None:
    stdio = StdioTransport(config(ENTRIES["stdio"]), ConnectionSettings(sandbox="enforce", network="off"))
    assert stdio.launch is None
    assert not stdio.needs_restart(["/somewhere"])
    sandbox = stdio.sandbox()
    assert sandbox == planned_sandbox("enforce").model_copy(update={"network": "off"})
    assert sandbox.planned
    assert stdio.closed_request_ends_session


def test_shared_folders_on_a_stdio_command_line_reach_the_server_through_its_launch() -> None:
    entry = {**ENTRIES["stdio"], "args": ["-c", "pass", SHARED_FOLDERS]}
    assert StdioTransport(config(entry), ConnectionSettings()).reach() == ("launch",)
    assert StdioTransport(config(ENTRIES["stdio"]), ConnectionSettings()).reach() == ()


def test_an_http_server_runs_nowhere_here_so_folders_reach_it_as_roots_alone() -> None:
    http = HttpTransport(config(ENTRIES["http"]), ConnectionSettings())
    assert http.launch is None
    assert http.reach() == ()
    assert http.sandbox() is None
    assert not http.needs_restart(["/somewhere"])
    assert not http.closed_request_ends_session
