"""Every ``hostBridge/*`` message, declared once: its method, kind, direction and the models of its params and result.

Each entry is a module constant whose type annotation names the models: ``Request[Params, Result]`` for a request,
``Notification[Params]`` for a notification. This table is read by

- the sidecar (:mod:`host_bridge.hosts.lsp.server`), which registers one handler for every editor → sidecar request,
  validates its params with the entry's params model and sends the sidecar → editor messages;
- the TypeScript generator (:mod:`host_bridge.hosts.lsp.typescript`, ``make protocol``), which writes
  ``vscode-extension/src/protocol.ts`` from it;
- the docs check (:func:`check_protocol_doc`, run by the tests), which makes sure docs/protocol.md names exactly these
  methods, in the right tables, and carries :func:`table_hash`.

Nothing here imports pydantic or a model: the annotations are resolved the first time a message's models are needed,
after ``initialize`` was answered. How to add a message: docs/architecture.md, "How to add a ``hostBridge/*``
message". ``python -m host_bridge.hosts.lsp.messages`` prints the table and its hash.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import re
import sys
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

    from host_bridge.hosts.lsp.protocol import (
        AskConsentParams,
        AskConsentResult,
        CompleteArgumentParams,
        ListResourcesParams,
        ListResourceTemplatesParams,
        ListResourceTemplatesResult,
        ReadResourceParams,
        ResourceUpdatedNotification,
        SecretParams,
        SecretResult,
        ServerNotification,
        ServerParams,
        SetConsentParams,
        SetConsentResult,
        SignInParams,
        SignInResult,
        SignOutResult,
        StatusParams,
        StatusResult,
        StoreSecretParams,
        SubscriptionParams,
    )
    from host_bridge.hub.models import ServerStatus
    from host_bridge.hub.resources.models import Completion, ReadResult, ResourcePage

P = TypeVar("P", bound="BaseModel")
"""The params model of a message."""
R = TypeVar("R")
"""The result model of a request (``None``: the result is ``null``)."""

MODEL_MODULES = (
    "host_bridge.hosts.lsp.protocol",
    "host_bridge.hub.models",
    "host_bridge.hub.resources.models",
)
"""Where the models named in the annotations below are defined; none of them imports ``mcp``."""
DOC_HASH = re.compile(r"<!-- message table hash: ([0-9a-f]+) ")
"""How docs/protocol.md carries :func:`table_hash`."""


class Direction(StrEnum):
    """Who sends a message."""

    TO_SIDECAR = "editor → sidecar"
    TO_EDITOR = "sidecar → editor"


@dataclass(frozen=True, eq=False)
class AnswerEarly:
    """A request answered with what is known instead of waiting for the workspace to be applied."""

    within: float
    """Seconds the request waits for the workspace to be applied before its handler answers with what is known."""
    before_core: Mapping[str, object] = field(default_factory=dict[str, object])
    """The result while the core is still loading (nothing is known yet), sent at once without validating the params
    with their model: that would import the models, and wait for the whole import of the core under the import
    lock."""


@dataclass(frozen=True, eq=False)
class Message:
    """One ``hostBridge/*`` message; its models are named by the annotation of the constant that holds it."""

    kind: ClassVar[str]
    """``request`` or ``notification``."""
    method: str
    """The JSON-RPC method."""
    direction: Direction
    """Who sends it."""

    @property
    def name(self) -> str:
        """The method without ``hostBridge/``: the name of its TypeScript constant."""
        return self.method.removeprefix("hostBridge/")

    def params_model(self) -> type[BaseModel]:
        """The model its params are validated with (imports the models on first use)."""
        return _models()[self.method][0]

    def result_model(self) -> type[BaseModel] | None:
        """The model of a request's result (``None``: ``null``, or a notification)."""
        return _models()[self.method][1]


@dataclass(frozen=True, eq=False)
class Request(Message, Generic[P, R]):
    """A request; the editor waits for its result."""

    kind: ClassVar[str] = "request"
    early: AnswerEarly | None = None
    """Answered early with what is known (editor → sidecar only); by default a request waits for the workspace."""
    progress: str | None = None
    """Title of the work-done progress reported under the request's ``workDoneToken`` (editor → sidecar only)."""


@dataclass(frozen=True, eq=False)
class Notification(Message, Generic[P]):
    """A notification; nobody answers it."""

    kind: ClassVar[str] = "notification"


TO_SIDECAR, TO_EDITOR = Direction.TO_SIDECAR, Direction.TO_EDITOR

STATUS: Request[StatusParams, StatusResult] = Request(
    "hostBridge/status", TO_SIDECAR, early=AnswerEarly(0.5, {"servers": [], "candidates": [], "ready": False})
)
LIST_RESOURCES: Request[ListResourcesParams, ResourcePage] = Request(
    "hostBridge/listResources", TO_SIDECAR, progress="Listing MCP resources"
)
LIST_RESOURCE_TEMPLATES: Request[ListResourceTemplatesParams, ListResourceTemplatesResult] = Request(
    "hostBridge/listResourceTemplates", TO_SIDECAR
)
COMPLETE_ARGUMENT: Request[CompleteArgumentParams, Completion] = Request("hostBridge/completeArgument", TO_SIDECAR)
READ_RESOURCE: Request[ReadResourceParams, ReadResult] = Request("hostBridge/readResource", TO_SIDECAR)
SUBSCRIBE: Request[SubscriptionParams, None] = Request("hostBridge/subscribe", TO_SIDECAR)
UNSUBSCRIBE: Request[SubscriptionParams, None] = Request("hostBridge/unsubscribe", TO_SIDECAR)
SET_CONSENT: Request[SetConsentParams, SetConsentResult] = Request("hostBridge/setConsent", TO_SIDECAR)
RESTART_SERVER: Request[ServerParams, None] = Request("hostBridge/restartServer", TO_SIDECAR)
SIGN_OUT: Request[ServerParams, SignOutResult] = Request("hostBridge/signOut", TO_SIDECAR)
ASK_CONSENT: Request[AskConsentParams, AskConsentResult] = Request("hostBridge/askConsent", TO_EDITOR)
SIGN_IN: Request[SignInParams, SignInResult] = Request("hostBridge/signIn", TO_EDITOR)
GET_SECRET: Request[SecretParams, SecretResult] = Request("hostBridge/getSecret", TO_EDITOR)
STORE_SECRET: Request[StoreSecretParams, None] = Request("hostBridge/storeSecret", TO_EDITOR)
SERVER_CHANGED: Notification[ServerStatus] = Notification("hostBridge/serverChanged", TO_EDITOR)
RESOURCES_CHANGED: Notification[ServerNotification] = Notification("hostBridge/resourcesChanged", TO_EDITOR)
RESOURCE_UPDATED: Notification[ResourceUpdatedNotification] = Notification("hostBridge/resourceUpdated", TO_EDITOR)

MESSAGES: tuple[Message, ...] = tuple(value for value in list(globals().values()) if isinstance(value, Message))
"""The table, in the order above (the order of ``Methods`` in the TypeScript mirror)."""


def _constants() -> dict[str, Message]:
    """Constant name → message, for every entry of :data:`MESSAGES`."""
    return {name: value for name, value in vars(sys.modules[__name__]).items() if isinstance(value, Message)}


def declared_models() -> dict[str, tuple[str, str | None]]:
    """Method → the names of its params and result models as written in the annotations (nothing is imported)."""
    annotations: dict[str, str] = vars(sys.modules[__name__])["__annotations__"]
    found: dict[str, tuple[str, str | None]] = {}
    for name, message in _constants().items():
        node = ast.parse(annotations[name], mode="eval").body
        assert isinstance(node, ast.Subscript), f"{name} must be annotated as Request[...] or Notification[...]"
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        names = [ast.unparse(arg) for arg in args]
        result = names[1] if len(names) > 1 and names[1] != "None" else None
        found[message.method] = (names[0], result)
    return found


@functools.cache
def _models() -> dict[str, tuple[type[BaseModel], type[BaseModel] | None]]:
    """Method → its params and result models, resolved from the annotations (imports :data:`MODEL_MODULES`)."""
    namespace: dict[str, Any] = {}
    for module in MODEL_MODULES:
        namespace.update(vars(importlib.import_module(module)))
    hints = typing.get_type_hints(sys.modules[__name__], localns=namespace)
    models: dict[str, tuple[type[BaseModel], type[BaseModel] | None]] = {}
    for name, message in _constants().items():
        params, *rest = typing.get_args(hints[name])
        models[message.method] = (params, rest[0] if rest and rest[0] is not type(None) else None)
    return models


def table_hash() -> str:
    """A short hash of the table's declaration: every method, kind, direction, model names and early answer.

    docs/protocol.md carries it; a change to the table changes it, so the docs check fails until the docs are
    updated (as rust-analyzer does for its LSP extensions).
    """
    models = declared_models()
    lines: list[str] = []
    for message in MESSAGES:
        params, result = models[message.method]
        early = message.early.within if isinstance(message, Request) and message.early is not None else None
        progress = message.progress if isinstance(message, Request) else None
        lines.append(f"{message.method} {message.kind} {message.direction.value} {params} {result} {early} {progress}")
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]


_DOC_METHOD = re.compile(r"hostBridge/[A-Za-z]+")


def check_protocol_doc(text: str) -> list[str]:
    """What docs/protocol.md (``text``) gets wrong about the table: a method it does not list in the table of its
    direction, one it names that does not exist, a wrong kind, or a stale :func:`table_hash`; empty when none."""
    problems: list[str] = []
    found = DOC_HASH.search(text)
    if found is None or found.group(1) != table_hash():
        problems.append(
            f"docs/protocol.md must carry '<!-- message table hash: {table_hash()} ' (the table changed: check the "
            "doc says what the table now says, then put in the new hash)"
        )
    declared = {message.method: message for message in MESSAGES}
    for method in sorted(set(_DOC_METHOD.findall(text)) - set(declared)):
        problems.append(f"docs/protocol.md names {method}, which is not in the message table")
    listed: dict[Direction, set[str]] = {TO_SIDECAR: set(), TO_EDITOR: set()}
    section: Direction | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line.lower()
            section = TO_SIDECAR if TO_SIDECAR.value in heading else TO_EDITOR if TO_EDITOR.value in heading else None
        elif line.startswith("|") and section is not None:
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            for method in _DOC_METHOD.findall(cells[0]):
                listed[section].add(method)
                message = declared.get(method)
                if section is TO_EDITOR and message is not None and len(cells) > 1 and cells[1] != message.kind:
                    problems.append(f"docs/protocol.md lists {method} as a {cells[1]}; it is a {message.kind}")
    for direction, methods in listed.items():
        wanted = {message.method for message in MESSAGES if message.direction is direction}
        for method in sorted(wanted - methods):
            problems.append(f"docs/protocol.md does not list {method} in its {direction.value} table")
        for method in sorted(methods - wanted):
            problems.append(f"docs/protocol.md lists {method} under {direction.value}, which it is not")
    return problems


def main() -> int:
    """Print the table and its hash."""
    models = declared_models()
    for message in MESSAGES:
        params, result = models[message.method]
        answer = f" → {result or 'null'}" if isinstance(message, Request) else ""
        print(f"{message.method:36} {message.kind:12} {message.direction.value:18} {params}{answer}")
    print(f"<!-- message table hash: {table_hash()} (python -m host_bridge.hosts.lsp.messages) -->")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
