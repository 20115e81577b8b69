"""The format of ``consent.json``: its models, parsing, and the migrations from format versions 1 and 2.

Version 3 adds the decision ``allowReadOnly``: a folder shared read only (the server's sandbox may read it, not
write it). Version 2 files are read as they are (their decisions mean what they meant); an older host_bridge that
meets a version 3 file leaves it untouched and uses nothing in it, instead of misreading a read-only share.

Version 2 keys every decision by a server identity (where the server is defined, its id, its launch fingerprint;
see :mod:`host_bridge.consent.identity`). Version 1 keyed decisions by the fingerprint alone, so two servers with
the same launch configuration shared one answer. A version 1 record is kept only when it is unambiguous — every
record of its fingerprint was given for one and the same server id — and then waits, *unbound* (``source`` is
``null``), until a server with that id and fingerprint appears; it is then bound to that server's identity and
to no other. Ambiguous records are dropped, so the user is asked again. Nothing is ever widened.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal, Self, cast

from pydantic import AfterValidator, AwareDatetime, ConfigDict, Field, ValidationError, model_validator

from host_bridge.consent.identity import ServerIdentity
from host_bridge.wire import WireModel

FORMAT_VERSION = 3
"""The ``version`` of ``consent.json`` this host_bridge writes; version 1 and 2 files are migrated when read."""

PersistedDecision = Literal["allow", "allowReadOnly", "deny", "readOnly"]
"""A decision that outlives the process; session decisions are never written. ``allow`` shares a folder to read and
write, ``allowReadOnly`` to read only. ``readOnly`` is a path the sandbox refused and the user then allowed the server
to read (never a shared root)."""


class _FileModel(WireModel):
    model_config = ConfigDict(strict=True, extra="forbid")


def _absolute(value: str) -> str:
    if not os.path.isabs(value):
        raise ValueError("path must be absolute")
    return value


AbsolutePath = Annotated[str, Field(min_length=1), AfterValidator(_absolute)]
"""An absolute folder path."""


class _Owned(_FileModel):
    """The identity fields every record carries."""

    source: str | None
    """``settings`` or the real path of the config file defining the server; ``null`` for a record migrated from
    version 1 that no server has claimed yet."""
    server_id: str = Field(min_length=1)
    """The server's id in its source."""
    fingerprint: str = Field(min_length=1)
    """Fingerprint of the server's launch configuration (:mod:`host_bridge.consent.fingerprint`)."""

    def owned_by(self, identity: ServerIdentity) -> bool:
        """Whether this record is ``identity``'s (an unbound record belongs to nobody yet)."""
        return (self.source, self.server_id, self.fingerprint) == (
            identity.source,
            identity.server_id,
            identity.fingerprint,
        )

    def claimable_by(self, identity: ServerIdentity) -> bool:
        """Whether this is an unbound version 1 record that ``identity`` may claim."""
        return self.source is None and (self.server_id, self.fingerprint) == (identity.server_id, identity.fingerprint)

    @property
    def owner(self) -> tuple[str | None, str, str]:
        """(source, server id, fingerprint)."""
        return (self.source, self.server_id, self.fingerprint)


class RootRecord(_Owned):
    """One persisted decision about one folder for one server identity."""

    path: AbsolutePath
    """Canonical real path of the folder."""
    decision: PersistedDecision
    """``allow`` shares the folder; ``allowReadOnly`` shares it read only; ``deny`` keeps it private and suppresses
    further prompts; ``readOnly`` lets the server's sandbox read it without sharing it."""
    updated: AwareDatetime
    """When the decision was made."""


class TrustRecord(_Owned):
    """Whether the user trusts a server defined by a workspace (not by themselves) to be started at all."""

    trusted: bool
    """The user's answer."""
    updated: AwareDatetime
    """When the answer was given."""


class ConsentFile(_FileModel):
    """The whole of ``consent.json``."""

    version: Literal[3]
    """Format version (see :data:`FORMAT_VERSION`); a file with a higher one is left untouched."""
    roots: tuple[RootRecord, ...] = ()
    """Folder decisions, at most one per (identity, path), sorted."""
    trust: tuple[TrustRecord, ...] = ()
    """Trust answers, at most one per identity, sorted."""

    @model_validator(mode="after")
    def _unique(self) -> Self:
        if len({(*r.owner, r.path) for r in self.roots}) != len(self.roots):
            raise ValueError("two root records have the same server and path")
        if len({t.owner for t in self.trust}) != len(self.trust):
            raise ValueError("two trust records have the same server")
        return self


EMPTY = ConsentFile(version=FORMAT_VERSION)


def document(roots: Iterable[RootRecord], trust: Iterable[TrustRecord]) -> ConsentFile:
    """A file holding ``roots`` and ``trust`` in their canonical (sorted) order."""

    def order(record: _Owned) -> tuple[str, str, str]:
        return (record.source or "", record.server_id, record.fingerprint)

    return ConsentFile(
        version=FORMAT_VERSION,
        roots=tuple(sorted(roots, key=lambda r: (*order(r), r.path))),
        trust=tuple(sorted(trust, key=order)),
    )


class _V2Root(RootRecord):
    decision: Literal["allow", "deny", "readOnly"]  # pyright: ignore[reportIncompatibleVariableOverride]


class _V2File(_FileModel):
    version: Literal[2]
    roots: tuple[_V2Root, ...] = ()
    trust: tuple[TrustRecord, ...] = ()


class _V1Root(_FileModel):
    server: str = Field(min_length=1)
    path: AbsolutePath
    decision: PersistedDecision
    server_id: str
    updated: AwareDatetime


class _V1Trust(_FileModel):
    server: str = Field(min_length=1)
    trusted: bool
    server_id: str
    updated: AwareDatetime


class _V1File(_FileModel):
    version: Literal[1]
    roots: tuple[_V1Root, ...] = ()
    trust: tuple[_V1Trust, ...] = ()


class InvalidFile(ValueError):
    """``consent.json`` is not a consent file this host_bridge can read; the message says where it breaks."""


class NewerFile(Exception):
    """``consent.json`` was written by a newer host_bridge."""

    def __init__(self, version: int) -> None:
        self.version = version
        """The file's format version."""
        super().__init__(f"version {version}")


@dataclass(frozen=True)
class Parsed:
    """A parsed file, and what migrating it from version 1 dropped."""

    document: ConsentFile
    """The file as the current version."""
    migrated_from: int | None = None
    """The version it was migrated from, if any."""
    dropped: int = 0
    """Version 1 records dropped because their fingerprint was used by several server ids (asked again)."""


def parse(raw: bytes) -> Parsed:
    """Parse and validate ``consent.json``; raises :class:`InvalidFile` or :class:`NewerFile`."""
    if not raw.strip():
        raise InvalidFile("the file is empty")
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise InvalidFile("it is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise InvalidFile(f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    except RecursionError:
        raise InvalidFile("it is nested too deeply") from None
    if not isinstance(data, dict):
        raise InvalidFile("the top level is not a JSON object")
    version = cast(dict[str, object], data).get("version")
    if type(version) is not int:
        raise InvalidFile("'version' is missing or not a whole number")
    if version > FORMAT_VERSION:
        raise NewerFile(version)
    try:
        if version == 1:
            return _migrate(_V1File.model_validate_json(raw))
        if version == 2:
            old = _V2File.model_validate_json(raw)
            roots = [RootRecord.model_validate(r.model_dump()) for r in old.roots]
            return Parsed(document(roots, old.trust), migrated_from=2)
        return Parsed(ConsentFile.model_validate_json(raw))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "file"
        raise InvalidFile(f"{where}: {first['msg']}") from None


def _migrate(old: _V1File) -> Parsed:
    """Version 1 → 3: keep the records of fingerprints used by exactly one server id, unbound; drop the rest."""
    ids: dict[str, set[str]] = {}
    for record in (*old.roots, *old.trust):
        ids.setdefault(record.server, set()).add(record.server_id)
    unambiguous = {fp for fp, names in ids.items() if len(names) == 1 and "" not in names}
    roots = [
        RootRecord(
            source=None,
            server_id=r.server_id,
            fingerprint=r.server,
            path=r.path,
            decision=r.decision,
            updated=r.updated,
        )
        for r in old.roots
        if r.server in unambiguous
    ]
    trust = [
        TrustRecord(source=None, server_id=t.server_id, fingerprint=t.server, trusted=t.trusted, updated=t.updated)
        for t in old.trust
        if t.server in unambiguous
    ]
    dropped = len(old.roots) + len(old.trust) - len(roots) - len(trust)
    return Parsed(document(roots, trust), migrated_from=1, dropped=dropped)
