"""Generate ``vscode-extension/src/protocol.ts`` from the message table and its models, so the two sides cannot drift.

``python -m host_bridge.hosts.lsp.typescript`` prints the file; ``--check FILE`` exits 1 when FILE differs from
what would be generated (run by ``make test``). Each model becomes an ``export interface`` with its docstrings as
JSDoc (a model derived from another one ``extends`` it); each message of :mod:`host_bridge.hosts.lsp.messages`
becomes a typed ``RequestType`` or ``NotificationType``; the JSON-RPC error codes of :mod:`host_bridge.hub.errors`
become ``ErrorCodes``.

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

from lsprotocol.types import LSPErrorCodes
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from host_bridge.hosts.lsp import messages
from host_bridge.hosts.lsp.protocol import InitializationOptions
from host_bridge.hub import errors


def _messages() -> list[_Entry]:
    return [_Entry(message, message.params_model(), message.result_model()) for message in messages.MESSAGES]


@dataclass(frozen=True)
class _Entry:
    """A message of the table with its models resolved."""

    message: messages.Message
    params: type[BaseModel]
    result: type[BaseModel] | None

    @property
    def outbound(self) -> bool:
        """Sent by the sidecar (to the editor)."""
        return self.message.direction is messages.Direction.TO_EDITOR


def _error_codes() -> list[tuple[str, int, str | None]]:
    """``(camelCase name, code, docstring)`` of every error code the editor can be answered with."""
    docs = _constant_docs(errors)
    codes = [
        (_camel(name), value, docs.get(name))
        for name, value in vars(errors).items()
        if name.isupper() and isinstance(value, int)
    ]
    codes.append(("requestCancelled", int(LSPErrorCodes.RequestCancelled), "The editor cancelled the request."))
    return codes


def _camel(name: str) -> str:
    first, *rest = name.lower().split("_")
    return first + "".join(word.capitalize() for word in rest)


def _constant_docs(module: object) -> dict[str, str]:
    """The docstrings under the module-level constants of ``module``, read from its source."""
    return _docs_under(ast.parse(inspect.getsource(cast(Any, module))).body)


def _docs_under(body: list[ast.stmt]) -> dict[str, str]:
    """Name → the string literal right under its assignment, for every assignment in ``body`` that has one."""
    docs: dict[str, str] = {}
    for statement, following in itertools.pairwise(body):
        target = statement.target if isinstance(statement, ast.AnnAssign) else None
        if isinstance(statement, ast.Assign):
            target = statement.targets[0]
        if (
            isinstance(target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[target.id] = inspect.cleandoc(following.value.value)
    return docs


def _outbound_models(table: list[_Entry]) -> set[str]:
    """Names of every model reachable from what the sidecar sends."""
    roots: list[type[BaseModel]] = []
    for entry in table:
        if entry.outbound:
            roots.append(entry.params)
        elif entry.result is not None:
            roots.append(entry.result)
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
        base = _emitted_base(model, self._defs)
        inherited = base.model_fields if base is not None else {}
        extends = f" extends {base.__name__}" if base is not None else ""
        self.lines.append(f"export interface {name}{extends} {{")
        for field_name, field in model.model_fields.items():
            if field_name in inherited:
                continue
            alias = field.alias or field_name
            prop = cast(dict[str, Any], schema["properties"][alias])
            always = field.is_required() or (name in self._outbound and field.default is not None)
            self.doc(field.description or _field_docs(model).get(field_name), "  ")
            self.lines.append(f"  {alias}{'' if always else '?'}: {self.type_of(prop)};")
        self.lines.append("}")
        self.lines.append("")


def _emitted_base(model: type[BaseModel], defs: dict[str, Any]) -> type[BaseModel] | None:
    """The nearest base of ``model`` that is itself an interface of the file (``ServerStatus`` → ``ServerRef``)."""
    for base in model.__mro__[1:]:
        if issubclass(base, BaseModel) and base.__name__ in defs:
            return base
    return None


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
        docs.update(_docs_under(cast(ast.ClassDef, tree.body[0]).body))
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
    table = _messages()
    extra: list[type[BaseModel]] = [InitializationOptions]
    roots = [*extra, *(m.params for m in table), *(m.result for m in table if m.result is not None)]
    classes = _model_classes(roots)
    unique = list(dict.fromkeys(roots))
    _, schema = models_json_schema([(model, "validation") for model in unique], by_alias=True)
    defs = cast(dict[str, Any], schema["$defs"])
    writer = _Writer(defs, classes, _outbound_models(table))
    out = writer.lines
    out += [
        "// Generated by `python -m host_bridge.hosts.lsp.typescript` from the message table",
        "// (host_bridge/hosts/lsp/messages.py), its models and the error codes of host_bridge/hub/errors.py.",
        "// Do not edit: change the table or the models and run `make protocol`; `make test` fails when this file",
        "// drifts.",
        "",
        'import { NotificationType, RequestType } from "vscode-jsonrpc";',
        "",
    ]
    for name in sorted(defs):
        writer.definition(name)
    out.append("/** Every `hostBridge/*` method name. */")
    out.append("export const Methods = {")
    out += [f"  {m.message.name}: {json.dumps(m.message.method)}," for m in table]
    out.append("} as const;")
    out.append("")
    out.append('/** The JSON-RPC error codes the sidecar answers with (docs/protocol.md, "Errors"). */')
    out.append("export const ErrorCodes = {")
    for name, code, doc in _error_codes():
        writer.doc(doc, "  ")
        out.append(f"  {name}: {code},")
    out.append("} as const;")
    out.append("")
    for m in table:
        name, method = m.message.name, json.dumps(m.message.method)
        out.append(f"/** `{m.message.method}` ({m.message.direction.value}). */")
        if isinstance(m.message, messages.Request):
            result = m.result.__name__ if m.result is not None else "null"
            out.append(f"export const {name} = new RequestType<{m.params.__name__}, {result}, void>({method});")
        else:
            out.append(f"export const {name} = new NotificationType<{m.params.__name__}>({method});")
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
