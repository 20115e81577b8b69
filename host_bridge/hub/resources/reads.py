"""Completing template arguments, expanding templates and reading resources within a size cap.

A read goes to the one server that named the URI. Only contents for the requested URI are kept; their decoded size
is checked against the cap before anything is decoded, and base64 is validated slice by slice, never held decoded.
"""

from __future__ import annotations

import binascii
import logging
from collections.abc import Mapping

import mcp_types as types
from mcp import InputRequiredRoundsExceededError, MCPError
from pydantic import ValidationError

from host_bridge.hub.errors import InvalidRequestError, ResourceNotFoundError, ResourceTooLargeError, UpstreamError
from host_bridge.hub.resources.labels import upstream_text
from host_bridge.hub.resources.models import Completion, Content, ReadResult, ResourceSettings
from host_bridge.hub.resources.sources import NOT_FOUND_CODES, ResourceSources, upstream
from host_bridge.hub.resources.templates import TemplateError, Value, expand, is_defined, parse

logger = logging.getLogger(__name__)

MAX_COMPLETION_VALUES = 100
"""The spec's maximum number of values in one ``completion/complete`` answer."""
_SLICE = 2**16
"""Characters checked at a time when sizing a big text or blob (a multiple of 4, for base64)."""


class Reads:
    """Completion, template expansion and reads from the broker's servers."""

    def __init__(self, sources: ResourceSources, settings: ResourceSettings) -> None:
        self._sources = sources
        self._settings = settings

    async def complete(
        self, server: str, uri_template: str, name: str, value: str, arguments: Mapping[str, Value] | None = None
    ) -> Completion:
        """Suggestions for argument ``name`` of ``uri_template`` given its partial ``value`` and the other
        ``arguments`` (a list is passed on comma-joined, as MCP context arguments are strings); empty when the
        server does not offer completion."""
        client = self._sources.client(server)
        if client.server_capabilities.completions is None:
            return Completion()
        reference = types.ResourceTemplateReference(type="ref/resource", uri=uri_template)
        try:
            result = await client.complete(
                reference, {"name": name, "value": value}, context_arguments=_context(arguments)
            )
        except MCPError as error:
            if error.code == types.METHOD_NOT_FOUND:
                return Completion()
            raise upstream(self._sources, server, error, "completion/complete", client) from error
        except ValidationError as error:
            raise UpstreamError(server, "sent an invalid completion/complete result") from error
        completion = result.completion
        cut = len(completion.values) > MAX_COMPLETION_VALUES
        return Completion(
            values=tuple(completion.values[:MAX_COMPLETION_VALUES]),
            total=completion.total,
            has_more=True if cut else completion.has_more,
        )

    def expand(self, uri_template: str, arguments: Mapping[str, Value]) -> str:
        """Expand an RFC 6570 template, any level (:mod:`.templates`), with ``arguments``.

        A value is a string or a list of strings. ``{var}`` percent-encodes everything but unreserved characters
        (``/`` → ``%2F``; ``..`` stays literal), ``{+var}`` and ``{#var}`` keep reserved characters, non-ASCII
        becomes UTF-8 ``%XX``; a list expands per its operator and explode modifier (``{/path*}`` → ``/a/b``,
        ``{?tag*}`` → ``?tag=a&tag=b``). Every variable outside the trailing query expressions (``{?q}``,
        ``{&q}``) is required (an empty list counts as missing). Raises :class:`InvalidRequestError` for a bad
        template, a missing argument, a list where a prefix modifier needs a string, or a result over
        ``max_uri_length``.
        """
        try:
            template = parse(uri_template)
        except TemplateError as error:
            raise InvalidRequestError(
                f"the URI template {uri_template!r} is not valid: {error}", data={"uriTemplate": uri_template}
            ) from error
        missing = [name for name in template.required if not is_defined(arguments.get(name))]
        if missing:
            raise InvalidRequestError(
                f"missing a value for variable {missing[0]!r} of the URI template {uri_template!r}",
                data={"uriTemplate": uri_template, "missing": missing},
            )
        try:
            uri = expand(template, arguments)
        except TypeError as error:
            raise InvalidRequestError(f"URI template arguments must be strings or lists of strings: {error}") from error
        except ValueError as error:
            raise InvalidRequestError(f"URI template argument {error}") from error
        self._settings.check_uri_length(uri)
        return uri

    async def read(
        self,
        server: str,
        uri: str | None = None,
        *,
        uri_template: str | None = None,
        arguments: Mapping[str, Value] | None = None,
    ) -> ReadResult:
        """Read ``uri``, or the expansion of ``uri_template`` with ``arguments``, from ``server`` only.

        Only contents for the requested URI are kept. Raises :class:`ResourceNotFoundError` (the server said
        so, or sent no contents), :class:`ResourceTooLargeError` (decoded size over ``max_read_bytes``) or
        :class:`UpstreamError` (any other failure, invalid base64 included).
        """
        if uri_template is not None:
            if uri is not None:
                raise InvalidRequestError("give either a uri or a uriTemplate with arguments, not both")
            uri = self.expand(uri_template, arguments or {})
        elif uri is None:
            raise InvalidRequestError("give a uri, or a uriTemplate with arguments")
        else:
            self._settings.check_uri_length(uri)
        client = self._sources.client(server)
        try:
            result = await client.read_resource(uri)
        except MCPError as error:
            if error.code in NOT_FOUND_CODES:
                raise ResourceNotFoundError(server, uri, upstream_text(error.message)) from error
            raise upstream(self._sources, server, error, f"reading {uri}", client) from error
        except ValidationError as error:
            raise UpstreamError(server, f"sent an invalid result for {uri}") from error
        except InputRequiredRoundsExceededError as error:
            raise UpstreamError(server, f"kept asking for more input while reading {uri}") from error
        return ReadResult(uri=uri, contents=self._checked_contents(server, uri, result))

    def _checked_contents(self, server: str, uri: str, result: types.ReadResourceResult) -> tuple[Content, ...]:
        if not result.contents:
            raise ResourceNotFoundError(server, uri, "the server returned no contents")
        kept = [item for item in result.contents if item.uri == uri]
        if len(kept) < len(result.contents):
            logger.info(
                "[%s] dropped %d content item(s) for other URIs from the read of %s",
                server,
                len(result.contents) - len(kept),
                uri,
            )
        if not kept:
            raise ResourceNotFoundError(server, uri, "the server returned no contents for this URI")
        limit = self._settings.max_read_bytes
        total = 0
        contents: list[Content] = []
        for item in kept:
            if isinstance(item, types.TextResourceContents):
                # One character is at least one byte: a text this long is too large without encoding it.
                if total + len(item.text) > limit:
                    raise ResourceTooLargeError(server, uri, total + len(item.text), limit)
                total += _utf8_size(item.text)
                if total > limit:
                    raise ResourceTooLargeError(server, uri, total, limit)
                contents.append(Content(uri=uri, mime_type=item.mime_type, text=item.text))
            else:
                estimate = len(item.blob) * 3 // 4
                if total + estimate > limit:
                    raise ResourceTooLargeError(server, uri, total + estimate, limit)
                try:
                    total += base64_size(item.blob)
                except ValueError:
                    raise UpstreamError(server, f"returned invalid base64 for {uri}") from None
                contents.append(Content(uri=uri, mime_type=item.mime_type, blob=item.blob))
        return tuple(contents)


def _context(arguments: Mapping[str, Value] | None) -> dict[str, str] | None:
    """MCP completion context arguments (strings): a list is comma-joined, as ``{var}`` would expand it."""
    if not arguments:
        return None
    return {name: value if isinstance(value, str) else ",".join(value) for name, value in arguments.items()}


def _utf8_size(text: str) -> int:
    """The UTF-8 size of ``text`` (lone surrogates count 3 bytes), without holding an encoded copy."""
    if text.isascii():
        return len(text)
    return sum(
        len(text[start : start + _SLICE].encode("utf-8", "surrogatepass")) for start in range(0, len(text), _SLICE)
    )


def base64_size(blob: str) -> int:
    """The decoded size of strict base64 ``blob``; raises ``ValueError`` when it is not (RFC 4648, padded, no
    whitespace). Decodes slice by slice and keeps nothing, so a 16 MiB blob is never held a second time."""
    if len(blob) % 4:
        raise ValueError("base64 length is not a multiple of 4")
    padding = 2 if blob.endswith("==") else 1 if blob.endswith("=") else 0
    if blob.find("=", 0, len(blob) - padding) >= 0:
        raise ValueError("misplaced base64 padding")
    for start in range(0, len(blob), _SLICE):
        binascii.a2b_base64(blob[start : start + _SLICE], strict_mode=True)
    return len(blob) // 4 * 3 - padding
