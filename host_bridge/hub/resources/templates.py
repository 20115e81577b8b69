"""RFC 6570 URI templates, all of level 4: parsed strictly here, expanded by ``uritemplate`` (python-hyper).

Every operator (none, ``+``, ``#``, ``.``, ``/``, ``;``, ``?``, ``&``), variable lists (``{x,y}``), the prefix
modifier (``{var:3}``) and explode (``{/path*}``, ``{?list*}``) are accepted. A value is a string or a list of
strings; an empty list is undefined (RFC 6570 §2.3), like a missing value. The SDK's limits hold: a template is at
most :data:`MAX_TEMPLATE_LENGTH` characters with at most :data:`MAX_VARIABLES` variables (the URI's own limit is
:attr:`ResourceSettings.max_uri_length`).

:func:`parse` checks the grammar of RFC 6570 §2 (``uritemplate`` itself accepts anything between braces);
:func:`expand` leaves the expansion to ``uritemplate`` and then percent-encodes, as §3.1 and §3.2.1 ask, whatever
is still not allowed in a URI: literal characters such as a space or non-ASCII, and, for ``{+var}`` and
``{#var}``, the characters ``uritemplate`` passes through unencoded when the value also holds a ``%XX`` triplet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, cast
from urllib.parse import quote

from mcp.shared.uri_template import DEFAULT_MAX_TEMPLATE_LENGTH, DEFAULT_MAX_VARIABLES
from uritemplate import URITemplate
from uritemplate.variable import VariableValue

MAX_TEMPLATE_LENGTH = DEFAULT_MAX_TEMPLATE_LENGTH
"""Longest template accepted (the MCP SDK's limit)."""
MAX_VARIABLES = DEFAULT_MAX_VARIABLES
"""Most variables (varspecs, counted across all expressions) in one template (the MCP SDK's limit)."""

Operator = Literal["", "+", "#", ".", "/", ";", "?", "&"]
"""An expression's operator (RFC 6570 §2.2); ``""`` is simple string expansion."""

_OPERATORS = frozenset("+#./;?&")
_RESERVED_OPERATORS = frozenset("=,!@|")
_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = re.compile(rf"(?P<name>{_VARCHAR}(?:\.?{_VARCHAR})*)(?::(?P<prefix>[1-9][0-9]{{0,3}})|(?P<explode>\*))?")
_URI_CHARACTERS = "-._~:/?#[]@!$&'()*+,;=%"
"""ASCII letters and digits aside, what may stand in a URI: unreserved, reserved, and ``%`` of a triplet."""
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


class TemplateError(ValueError):
    """A template that is not RFC 6570, or over the SDK's limits; the message says where."""


@dataclass(frozen=True)
class VarSpec:
    """One variable of an expression, with its modifier."""

    name: str
    operator: Operator
    """The operator of the expression it is in."""
    prefix: int | None = None
    """``{var:N}``: at most N characters of a string value."""
    explode: bool = False
    """``{var*}``: a list's items each expand with the operator's separator (and ``name=`` when named)."""


@dataclass(frozen=True)
class Template:
    """A parsed template."""

    text: str
    varspecs: tuple[VarSpec, ...]
    """Every variable of every expression, in order (a name may come more than once)."""
    optional: frozenset[str]
    """Names only in the trailing run of query expressions (``{?…}``, then any ``{&…}``): every other variable
    must have a value."""

    @property
    def variables(self) -> tuple[str, ...]:
        """Variable names in order of first appearance, each once."""
        return tuple(dict.fromkeys(spec.name for spec in self.varspecs))

    @property
    def required(self) -> tuple[str, ...]:
        """Names that must have a value to expand: all but :attr:`optional`."""
        return tuple(name for name in self.variables if name not in self.optional)

    @property
    def prefixed(self) -> frozenset[str]:
        """Names used with a prefix modifier somewhere: only a string fits them (RFC 6570 §2.4.1)."""
        return frozenset(spec.name for spec in self.varspecs if spec.prefix is not None)


def parse(text: str) -> Template:
    """Parse an RFC 6570 template (every level); :class:`TemplateError` when it is not one or is too long."""
    if len(text) > MAX_TEMPLATE_LENGTH:
        raise TemplateError(f"it is {len(text)} characters long, over the limit of {MAX_TEMPLATE_LENGTH}")
    varspecs: list[VarSpec] = []
    tail: list[VarSpec] | None = None  # the varspecs of a trailing run of query expressions, while in one
    position = 0
    while position < len(text):
        opening = text.find("{", position)
        literal = text[position : len(text) if opening < 0 else opening]
        if "}" in literal:
            raise TemplateError(f"'}}' without '{{' at position {position + literal.index('}')}")
        if literal:
            tail = None
        if opening < 0:
            break
        closing = text.find("}", opening)
        if closing < 0:
            raise TemplateError(f"the expression at position {opening} is not closed")
        body = text[opening + 1 : closing]
        if "{" in body:
            raise TemplateError(f"the expression at position {opening} holds a '{{'")
        specs = _expression(body, opening)
        varspecs.extend(specs)
        if len(varspecs) > MAX_VARIABLES:
            raise TemplateError(f"it has more than {MAX_VARIABLES} variables")
        # A run of query expressions that starts with {?…}: the one that emits the "?".
        query = (specs[0].operator == "&" and tail is not None) or specs[0].operator == "?"
        tail = [*(tail or ()), *specs] if query else None
        position = closing + 1
    tail = tail or []
    elsewhere = {spec.name for spec in varspecs[: len(varspecs) - len(tail)]}
    return Template(text, tuple(varspecs), frozenset(spec.name for spec in tail if spec.name not in elsewhere))


def _expression(body: str, at: int) -> list[VarSpec]:
    operator: Operator = ""
    if body[:1] in _OPERATORS:
        operator, body = cast(Operator, body[0]), body[1:]
    elif body[:1] in _RESERVED_OPERATORS:
        raise TemplateError(f"the operator {body[0]!r} at position {at} is reserved for future extensions")
    if not body:
        raise TemplateError(f"the expression at position {at} names no variable")
    specs: list[VarSpec] = []
    for varspec in body.split(","):
        match = _VARSPEC.fullmatch(varspec)
        if match is None:
            raise TemplateError(f"{varspec!r} at position {at} is not a variable name with an optional :N or *")
        prefix = match.group("prefix")
        specs.append(
            VarSpec(match.group("name"), operator, int(prefix) if prefix else None, match.group("explode") is not None)
        )
    return specs


Value = str | Sequence[str]
"""A variable's value: a string, or a list of strings."""


def expand(template: Template, arguments: Mapping[str, Value]) -> str:
    """The URI: ``template`` expanded with ``arguments`` (a missing or empty-list value is undefined).

    Raises :class:`TypeError` for a value that is neither a string nor a list of strings, and
    :class:`ValueError` for a list given to a variable used with a prefix modifier.
    """
    values: dict[str, VariableValue] = {}
    for name in template.variables:
        value = arguments.get(name)
        if value is None:
            continue
        if isinstance(value, str):
            values[name] = value
            continue
        items: list[object] = list(value)
        if not all(isinstance(item, str) for item in items):
            raise TypeError(f"the value of {name!r} is neither a string nor a list of strings")
        if not items:
            continue
        if name in template.prefixed:
            raise ValueError(f"{name!r} has a prefix modifier ({{{name}:N}}), so its value must be a string")
        values[name] = cast(list[str], items)
    expanded = URITemplate(template.text).expand(values) if template.varspecs else template.text
    return quote(_LONE_PERCENT.sub("%25", expanded), safe=_URI_CHARACTERS)


def is_defined(value: Value | None) -> bool:
    """Whether a value counts as given: not missing and not an empty list."""
    return value is not None and (isinstance(value, str) or len(value) > 0)
