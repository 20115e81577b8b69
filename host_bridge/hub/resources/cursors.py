"""Listing cursors: every server's position in an aggregated listing, in one opaque, signed string.

A cursor is JSON of :class:`CursorState` (short keys keep it small: readable names in Python, one-letter aliases on
the wire), then an HMAC under a key made when the broker starts: a cursor this process did not make, or made for
another listing, is refused. A :class:`Walk` names the kept list of a server it reads (its generation, see
:mod:`host_bridge.hub.resources.cache`) and how far it read, never an upstream cursor, so a cursor stays small
whatever the servers send. :class:`UpstreamWalk` follows one server's own cursors while its list is fetched: a server
that repeats one, or pages on past ``max_pages``, is stopped instead of walked forever.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from host_bridge.hub.errors import InvalidRequestError

HASH_CHARS = 12
"""Hex characters kept of each upstream cursor's hash."""
_MAC_BYTES = 16
_CONFIG = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)


class Walk(BaseModel):
    """One server's progress through a listing, carried in the cursor."""

    model_config = _CONFIG

    server: str = Field(validation_alias="id", serialization_alias="id")
    """The server walked."""
    generation: int = Field(default=0, ge=0, validation_alias="g", serialization_alias="g")
    """The kept list it reads (:attr:`Snapshot.generation`); 0 before the first page."""
    offset: int = Field(default=0, ge=0, validation_alias="o", serialization_alias="o")
    """Resources of that list handed out so far."""
    done: bool = Field(default=False, validation_alias="d", serialization_alias="d")
    """The walk is finished (end reached, cut short or failed)."""


@dataclass
class UpstreamWalk:
    """A server's own pagination while its list is fetched: its next cursor, pages so far, cursors seen."""

    server: str
    """The server walked."""
    cursor: str | None = None
    """The upstream cursor of the next page; ``None`` for the first."""
    pages: int = 0
    """Pages fetched so far."""
    seen: set[str] = field(default_factory=set[str])
    """Short hashes of the upstream cursors seen (a hostile cursor may be megabytes long)."""
    done: bool = False
    """The walk is finished (end reached or cut short)."""

    def advance(self, next_cursor: str | None, what: str, max_pages: int) -> str | None:
        """Move past a fetched page; stop on the last page, a repeated cursor or the page cap (then say why)."""
        self.pages += 1
        if not next_cursor:
            self.done = True
            return None
        digest = hashlib.sha256(next_cursor.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
        if digest in self.seen or next_cursor == self.cursor:
            self.done = True
            return f"MCP server {self.server!r} repeated a pagination cursor; the list may be incomplete"
        if self.pages >= max_pages:
            self.done = True
            return f"MCP server {self.server!r} has more than {max_pages} pages of {what}; the list may be incomplete"
        self.seen.add(digest)
        self.cursor = next_cursor
        return None


class CursorState(BaseModel):
    """Everything a listing cursor holds."""

    model_config = _CONFIG

    version: Literal[2] = Field(default=2, validation_alias="v", serialization_alias="v")
    """Format of the cursor."""
    server: str | None = Field(default=None, validation_alias="s", serialization_alias="s")
    """The server of a single-server listing; ``None`` for an aggregated one."""
    walks: list[Walk] = Field(validation_alias="w", serialization_alias="w")
    """Every server's walk, in configuration order."""


class CursorSigner:
    """Turns :class:`CursorState` into opaque cursors and back, refusing any it did not make."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)
        """Signs listing cursors: a cursor this process did not make is refused."""

    def encode(self, state: CursorState) -> str:
        """The cursor for ``state``."""
        body = state.model_dump_json(exclude_defaults=True).encode()
        return f"{_b64url(body)}.{_b64url(self._mac(body))}"

    def decode(self, cursor: str, server: str | None) -> CursorState:
        """The state in ``cursor``; raises :class:`InvalidRequestError` unless this signer made it for a listing of
        ``server`` (``None``: every server)."""
        invalid = InvalidRequestError(
            "the listing cursor is invalid or expired (it must be passed back exactly as received,"
            " to the same listing); start the listing again without a cursor",
            data={"cursor": cursor[:100]},
        )
        body_text, dot, mac_text = cursor.partition(".")
        if not dot:
            raise invalid
        try:
            body = _unb64url(body_text)
            mac = _unb64url(mac_text)
        except (binascii.Error, ValueError):
            raise invalid from None
        if not hmac.compare_digest(mac, self._mac(body)):
            raise invalid
        try:
            state = CursorState.model_validate_json(body)
        except ValidationError:
            raise invalid from None
        if state.server != server:
            raise InvalidRequestError(
                "the listing cursor belongs to a different listing (another server filter);"
                " start the listing again without a cursor",
                data={"cursor": cursor[:100]},
            )
        return state

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).digest()[:_MAC_BYTES]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(text: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
