"""Generate ``vscode-extension/src/protocol.ts`` from the pydantic models, so the two sides cannot drift.

``python -m host_bridge.hosts.lsp.typescript`` prints the file; ``--check FILE`` exits 1 when FILE differs from
what would be generated (run by ``make test``). Each model becomes an ``export interface`` with its
docstrings as JSDoc; each ``hostBridge/*`` message becomes a typed ``RequestType`` or ``NotificationType``.

Optional fields: a field the sidecar always sends (required, or with a non-``None`` default) is required in
TypeScript for models the sidecar sends; ``None`` defaults are left out on the wire, so they are optional.
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import itertools
import json
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from host_bridge.hosts.lsp import methods


@dataclass(frozen=True)
class Message:
    """One ``hostBridge/*`` message and the models of its params and result."""

    method: str
    params: type[BaseModel]
    result: type[BaseModel] | None
    """``None``: a notification, or a request whose result is ``null`` (see :attr:`request`)."""
    request: bool
    outbound: bool
    """Sent by the sidecar (to the editor)."""

    @property
    def name(self) -> str:
        """The TypeScript name of the message: the method without ``hostBridge/``."""
        return self.method.removeprefix("hostBridge/")


def _messages() -> tuple[list[Message], list[type[BaseModel]]]:
    from host_bridge.hosts.lsp import protocol as p
    from host_bridge.hub.models import ServerStatus
    from host_bridge.hub.resources.models import Completion, ReadResult, ResourcePage

    p.resolve_hub_models()
    table = [
        Message(methods.STATUS, p.StatusParams, p.StatusResult, True, False),
        Message(methods.LIST_RESOURCES, p.ListResourcesParams, ResourcePage, True, False),
        Message(
            methods.LIST_RESOURCE_TEMPLATES,
            p.ListResourceTemplatesParams,
            p.ListResourceTemplatesResult,
            True,
            False,
        ),
        Message(methods.COMPLETE_ARGUMENT, p.CompleteArgumentParams, Completion, True, False),
        Message(methods.READ_RESOURCE, p.ReadResourceParams, ReadResult, True, False),
        Message(methods.SUBSCRIBE, p.SubscriptionParams, None, True, False),
        Message(methods.UNSUBSCRIBE, p.SubscriptionParams, None, True, False),
        Message(methods.SET_CONSENT, p.SetConsentParams, p.SetConsentResult, True, False),
        Message(methods.RESTART_SERVER, p.ServerParams, None, True, False),
        Message(methods.ASK_CONSENT, p.AskConsentParams, p.AskConsentResult, True, True),
        Message(methods.SERVER_CHANGED, ServerStatus, None, False, True),
        Message(methods.RESOURCES_CHANGED, p.ServerNotification, None, False, True),
        Message(
            methods.RESOURCE_UPDATED,
            p.ResourceUpdatedNotification,
            None,
            False,
            True,
        ),
    ]
    return table, [p.InitializationOptions]


def _outbound_models(table: list[Message]) -> set[str]:
    """Names of every model reachable from what the sidecar sends."""
    roots: list[type[BaseModel]] = []
    for message in table:
        if message.outbound:
            roots.append(message.params)
        elif message.result is not None:
            roots.append(message.result)
    names: set[str] = set()
    for schema in (model.model_json_schema(by_alias=True) for model in roots):
        names.update(cast(dict[str, Any], schema.get("$defs", {})).keys())
        names.add(str(schema["title"]))
    return names


class _Writer:
    def __init__(self, defs: dict[str, Any], classes: dict[str, type[BaseModel]], outbound: set[str]) -> None:
        self._defs = defs
        self._classes = classes
        self._outbound = outbound
        self.lines: list[str] = []

    def type_of(self, schema: dict[str, Any]) -> str:
        if "$ref" in schema:
            return str(schema["$ref"]).rsplit("/", 1)[-1]
        if "const" in schema:
            return json.dumps(schema["const"])
        if "enum" in schema:
            return " | ".join(json.dumps(v) for v in schema["enum"])
        if "anyOf" in schema:
            options = [self.type_of(s) for s in schema["anyOf"] if s.get("type") != "null"]
            return " | ".join(dict.fromkeys(options))
        kind = schema.get("type")
        if kind == "array":
            item = self.type_of(schema.get("items", {}))
            return f"({item})[]" if " " in item else f"{item}[]"
        if kind == "object":
            extra = schema.get("additionalProperties", True)
            value = "unknown" if extra is True or extra == {} else self.type_of(extra)
            return f"Record<string, {value}>"
        return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}.get(
            str(kind), "unknown"
        )

    def doc(self, text: str | None, indent: str = "") -> None:
        if not text:
            return
        body = " ".join(re.sub(r":\w+:`", "`", text.replace("``", "`")).split())
        self.lines.append(f"{indent}/** {body} */")

    def definition(self, name: str) -> None:
        schema = self._defs[name]
        self.doc(schema.get("description"))
        if "enum" in schema:
            self.lines.append(f"export type {name} = {self.type_of(schema)};")
            self.lines.append("")
            return
        model = self._classes[name]
        self.lines.append(f"export interface {name} {{")
        for field_name, field in model.model_fields.items():
            alias = field.alias or field_name
            prop = cast(dict[str, Any], schema["properties"][alias])
            always = field.is_required() or (name in self._outbound and field.default is not None)
            self.doc(field.description or _field_docs(model).get(field_name), "  ")
            self.lines.append(f"  {alias}{'' if always else '?'}: {self.type_of(prop)};")
        self.lines.append("}")
        self.lines.append("")


@functools.cache
def _field_docs(model: type[BaseModel]) -> dict[str, str]:
    """The docstrings under the fields of ``model`` and its bases, read from their source.

    (pydantic's ``use_attribute_docstrings`` would read them for every model at import time, on the sidecar's
    start-up path; only this generator needs them.)
    """
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not issubclass(cls, BaseModel) or cls is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError):
            continue
        body = cast(ast.ClassDef, tree.body[0]).body
        for statement, following in itertools.pairwise(body):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _model_classes(roots: list[type[BaseModel]]) -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {}
    pending = list(roots)
    while pending:
        model = pending.pop()
        if model.__name__ in found:
            continue
        found[model.__name__] = model
        for field in model.model_fields.values():
            pending.extend(_nested_models(field.annotation))
    return found


def _nested_models(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    args = cast(tuple[object, ...], getattr(cast(Any, annotation), "__args__", ()))
    return [m for arg in args for m in _nested_models(arg)]


def generate() -> str:
    """The full text of ``protocol.ts``."""
    table, extra = _messages()
    roots = [*extra, *(m.params for m in table), *(m.result for m in table if m.result is not None)]
    classes = _model_classes(roots)
    unique = list(dict.fromkeys(roots))
    _, schema = models_json_schema([(model, "validation") for model in unique], by_alias=True)
    defs = cast(dict[str, Any], schema["$defs"])
    writer = _Writer(defs, classes, _outbound_models(table))
    out = writer.lines
    out += [
        "// Generated by `python -m host_bridge.hosts.lsp.typescript` from host_bridge/hosts/lsp/protocol.py and the"
        " hub models.",
        "// Do not edit: change the pydantic models and run `make protocol`. `make test` fails when this file drifts.",
        "",
        'import { NotificationType, RequestType } from "vscode-jsonrpc";',
        "",
    ]
    for name in sorted(defs):
        writer.definition(name)
    out.append("/** Every `hostBridge/*` method name. */")
    out.append("export const Methods = {")
    out += [f"  {m.name}: {json.dumps(m.method)}," for m in table]
    out.append("} as const;")
    out.append("")
    for m in table:
        direction = "sidecar → editor" if m.outbound else "editor → sidecar"
        out.append(f"/** `{m.method}` ({direction}). */")
        if m.request:
            result = m.result.__name__ if m.result is not None else "null"
            out.append(
                f"export const {m.name} = new RequestType<{m.params.__name__}, {result}, void>({json.dumps(m.method)});"
            )
        else:
            out.append(f"export const {m.name} = new NotificationType<{m.params.__name__}>({json.dumps(m.method)});")
    out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Print the generated file, or compare it with ``--check FILE``."""
    parser = argparse.ArgumentParser(prog="python -m host_bridge.hosts.lsp.typescript", description=__doc__)
    parser.add_argument("--check", type=Path, help="exit 1 if this file differs from the generated text")
    parser.add_argument("--write", type=Path, help="write the generated text to this file")
    args = parser.parse_args(argv)
    text = generate()
    if args.check is not None:
        current = args.check.read_text(encoding="utf-8") if args.check.exists() else ""
        if current != text:
            print(f"{args.check} is out of date with the pydantic models; run `make protocol`", file=sys.stderr)
            return 1
        return 0
    if args.write is not None:
        args.write.write_text(text, encoding="utf-8")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
