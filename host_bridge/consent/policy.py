"""The user's consent as the rest of host_bridge sees it: persisted decisions plus this session's.

Nothing is shared unless the user said so. Decisions belong to a server identity
(:class:`host_bridge.consent.identity.ServerIdentity`). A decision that cannot be saved (disk full, read-only or
blocked store, a lock held too long) still takes effect at once in the direction of *less* exposure: a deny or a
forget applies in this process; an allow applies for this session only; :class:`DecisionNotSaved` then tells the
caller what holds, in a sentence for the user. While the store is blocked (a file from a newer host_bridge, an
unsafe or unreadable file) persisted decisions are ignored.

Readers (:meth:`ConsentPolicy.is_allowed`, called while answering ``roots/list``) never wait for file I/O: the
store is read from its last snapshot, and this policy's own lock is never held while the store writes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from enum import StrEnum

from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.store import ConsentStore, ConsentStoreError, PersistedDecision

logger = logging.getLogger(__name__)

ChangeCallback = Callable[[frozenset[str]], None]
"""Called with the identity keys whose decisions or trust changed."""


class Decision(StrEnum):
    """The user's answer about sharing one folder with one server."""

    ALLOW = "allow"
    """Share it, now and in later sessions."""
    ALLOW_SESSION = "allowSession"
    """Share it until this sidecar exits; never written to disk."""
    ALLOW_READ_ONLY = "allowReadOnly"
    """Share it read only (its sandbox may read, not write it), now and in later sessions."""
    ALLOW_SESSION_READ_ONLY = "allowSessionReadOnly"
    """Share it read only until this sidecar exits; never written to disk."""
    DENY = "deny"
    """Do not share it, and do not ask again."""
    LET_READ = "readOnly"
    """Do not share it, but let the server's sandbox read it: a path (a package or runtime folder) the sandbox
    refused, which the user let it read. Never a root; not to be confused with :attr:`ALLOW_READ_ONLY`, a folder
    shared read only. (The stored value keeps its first name, ``readOnly``.)"""


SHARING = frozenset(
    {Decision.ALLOW, Decision.ALLOW_SESSION, Decision.ALLOW_READ_ONLY, Decision.ALLOW_SESSION_READ_ONLY}
)
"""The decisions that share a folder (read and write, or read only)."""
READ_ONLY_SHARING = frozenset({Decision.ALLOW_READ_ONLY, Decision.ALLOW_SESSION_READ_ONLY})
"""The decisions that share a folder read only."""
SESSION_ONLY = frozenset({Decision.ALLOW_SESSION, Decision.ALLOW_SESSION_READ_ONLY})
"""The decisions that are never written to disk."""


class DecisionNotSaved(Exception):
    """A decision could not be saved; :attr:`applied` holds in this process instead, and the message says so."""

    def __init__(self, message: str, applied: Decision | None, cause: ConsentStoreError) -> None:
        self.applied = applied
        """What now holds in this process (``None``: undecided, so not shared)."""
        self.cause = cause
        """Why saving failed."""
        super().__init__(message)


_Key = tuple[str, str]
"""(identity key, canonical path)."""
_View = tuple[dict[_Key, Decision], dict[str, bool]]

_UNSET = object()


class ConsentPolicy:
    """Answers "may this server see this folder?" from the store and this session's decisions.

    Thread-safe; change callbacks run in the thread that made the change, after the change, outside the lock.
    """

    def __init__(self, store: ConsentStore) -> None:
        self.store = store
        """The durable decisions; call its ``load`` before relying on this policy."""
        self._lock = threading.Lock()
        """Guards the session dictionaries and callbacks; never held during file I/O."""
        self._writing = threading.Lock()
        """Serialises this process's changes, so a change and its callbacks are not interleaved with another."""
        self._session: dict[_Key, Decision | None] = {}
        """This session's decisions, over the persisted ones: ``allowSession``, and a deny or forget (``None``)
        that could not be saved."""
        self._session_trust: dict[str, bool | None] = {}
        """Trust answers that could not be saved (``None``: forgotten)."""
        self._callbacks: list[ChangeCallback] = []

    def decision(self, identity: ServerIdentity, path: str) -> Decision | None:
        """This session's decision about ``path`` for ``identity``, else the persisted one, else ``None``."""
        key = (identity.key, path)
        with self._lock:
            session = self._session.get(key, _UNSET)
        if session is not _UNSET:
            return session  # pyright: ignore[reportReturnType]
        record = self.store.root(identity, path)
        return None if record is None else Decision(record.decision)

    def is_allowed(self, identity: ServerIdentity, path: str) -> bool:
        """Whether ``identity`` may see ``path`` now; ``False`` unless the user allowed it."""
        return self.decision(identity, path) in SHARING

    def decisions_for(self, identity: ServerIdentity) -> dict[str, Decision]:
        """Every decided path of ``identity`` and its effective decision."""
        decided = {path: Decision(d) for (key, path), d in self.store.decisions().items() if key == identity.key}
        with self._lock:
            for (key, path), session in self._session.items():
                if key != identity.key:
                    continue
                if session is None:
                    decided.pop(path, None)
                else:
                    decided[path] = session
        return decided

    def set(self, identity: ServerIdentity, path: str, decision: Decision) -> None:
        """Record the user's ``decision``; it replaces any earlier one for (identity, path).

        ``allowSession`` (and ``allowSessionReadOnly``) is never written; it removes a saved ``allow`` or
        ``allowReadOnly`` (so the folder is not shared in later sessions) but keeps a saved ``deny`` for them.
        Raises :class:`DecisionNotSaved` when the file could not be changed; the decision (or, for an allow, a
        session allow) holds in this process anyway.
        """
        self.set_many(identity, {path: decision})

    def set_many(self, identity: ServerIdentity, decisions: Mapping[str, Decision]) -> None:
        """:meth:`set` for several folders of one server: one write, one change announced (one answer to a prompt).

        Raises :class:`DecisionNotSaved` (for the first folder whose decision could not be saved) after applying
        every decision in this process.
        """
        decisions = {path: Decision(d) for path, d in decisions.items()}
        persisted: dict[str, PersistedDecision | None] = {}
        for path, decision in decisions.items():
            if decision in SESSION_ONLY:
                saved = self.store.root(identity, path)
                if saved is not None and saved.decision in ("allow", "allowReadOnly"):
                    persisted[path] = None
            else:
                persisted[path] = decision.value  # pyright: ignore[reportArgumentType]  (a persisted decision)
        with self._writing:
            before = self._view()
            error: DecisionNotSaved | None = None
            for path, decision in decisions.items():
                if decision in SESSION_ONLY:
                    self._put((identity.key, path), decision)
            try:
                if persisted:
                    self.store.set_roots(identity, persisted)
                for path, decision in decisions.items():
                    if decision not in SESSION_ONLY:
                        self._put((identity.key, path), _UNSET)
            except ConsentStoreError as cause:
                error = self._not_saved(identity, decisions, cause)
            self._announce(before)
        if error is not None:
            raise error

    def _not_saved(
        self, identity: ServerIdentity, decisions: Mapping[str, Decision], cause: ConsentStoreError
    ) -> DecisionNotSaved:
        """Apply ``decisions`` in this process only, in the direction of less exposure; the error saying so."""
        first: DecisionNotSaved | None = None
        for path, decision in decisions.items():
            if decision in SESSION_ONLY:
                what = (
                    f"{path} is shared with {identity.describe()} for this session, but its saved permission "
                    "could not be removed, so it would be shared again later"
                )
                applied = decision
            elif decision in (Decision.ALLOW, Decision.ALLOW_READ_ONLY):
                what = f"your decision could not be saved; {path} is shared with {identity.describe()} for this "
                what += "session only"
                applied = Decision.ALLOW_SESSION if decision is Decision.ALLOW else Decision.ALLOW_SESSION_READ_ONLY
            else:
                what = f"your decision could not be saved; {path} is not shared with {identity.describe()} until "
                what += "host_bridge restarts"
                applied = Decision.DENY
            self._put((identity.key, path), applied)
            if first is None:
                more = f" (and {len(decisions) - 1} more folder(s) alike)" if len(decisions) > 1 else ""
                first = DecisionNotSaved(f"{what}{more}: {cause}", applied, cause)
        assert first is not None
        return first

    def forget(self, identity: ServerIdentity, path: str) -> None:
        """Remove every decision about ``path`` for ``identity``, so the user is asked again.

        When the saved decision cannot be removed, the folder is still treated as undecided (so not shared) in this
        process, and :class:`DecisionNotSaved` says so.
        """
        key = (identity.key, path)
        with self._writing:
            before = self._view()
            error: DecisionNotSaved | None = None
            try:
                self.store.set_root(identity, path, None)
                self._put(key, _UNSET)
            except ConsentStoreError as cause:
                self._put(key, None)
                error = DecisionNotSaved(
                    f"your decision could not be saved; {path} is not shared with {identity.describe()} until "
                    f"host_bridge restarts, and may be shared again then: {cause}",
                    None,
                    cause,
                )
            self._announce(before)
        if error is not None:
            raise error

    def shared_read_only(self, identity: ServerIdentity) -> list[str]:
        """Folders shared with ``identity`` read only (``allowReadOnly``, ``allowSessionReadOnly``), sorted."""
        return sorted(path for path, d in self.decisions_for(identity).items() if d in READ_ONLY_SHARING)

    def read_only_paths(self, identity: ServerIdentity) -> list[str]:
        """Paths the user let ``identity``'s sandbox read after a refusal, sorted."""
        return sorted(path for path, d in self.decisions_for(identity).items() if d is Decision.LET_READ)

    def trusted(self, identity: ServerIdentity) -> bool | None:
        """Whether the user trusts the workspace-defined ``identity``; ``None`` if never asked (or blocked)."""
        with self._lock:
            if identity.key in self._session_trust:
                return self._session_trust[identity.key]
        record = self.store.trust_record(identity)
        return None if record is None else record.trusted

    def set_trust(self, identity: ServerIdentity, trusted: bool | None) -> None:
        """Persist the trust answer for ``identity`` (``None`` forgets it).

        When it cannot be saved it holds for this session, and :class:`DecisionNotSaved` says so.
        """
        with self._writing:
            before = self._view()
            error: DecisionNotSaved | None = None
            try:
                self.store.set_trust(identity, trusted)
                with self._lock:
                    self._session_trust.pop(identity.key, None)
            except ConsentStoreError as cause:
                with self._lock:
                    self._session_trust[identity.key] = trusted
                error = DecisionNotSaved(
                    f"your trust answer for {identity.describe()} could not be saved; it holds until host_bridge "
                    f"restarts: {cause}",
                    None,
                    cause,
                )
            self._announce(before)
        if error is not None:
            raise error

    def claim(self, identity: ServerIdentity) -> None:
        """Bind decisions saved by an older host_bridge for this server's id and launch config to ``identity``.

        Failing to save leaves them unbound (so unused): the user is asked again, nothing is widened.
        """
        if not self.store.claimable(identity):
            return
        with self._writing:
            before = self._view()
            try:
                self.store.claim(identity)
            except ConsentStoreError as cause:
                logger.warning("could not adopt the saved decisions of %s: %s", identity.describe(), cause)
            self._announce(before)

    def reload(self) -> frozenset[str]:
        """Pick up changes other processes made to the store file; the identity keys whose decisions changed."""
        with self._writing:
            before = self._view()
            self.store.reload()
            return self._announce(before)

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call ``callback`` after decisions or trust change (by this policy or on reload).

        It receives the affected identity keys. Returns a function that unregisters it.
        """
        with self._lock:
            self._callbacks.append(callback)

        def unregister() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return unregister

    def _put(self, key: _Key, value: Decision | object | None) -> None:
        with self._lock:
            if value is _UNSET:
                self._session.pop(key, None)
            else:
                self._session[key] = value  # pyright: ignore[reportArgumentType]

    def _view(self) -> _View:
        decisions = {key: Decision(d) for key, d in self.store.decisions().items()}
        trust = self.store.trust_answers()
        with self._lock:
            for key, session in self._session.items():
                if session is None:
                    decisions.pop(key, None)
                else:
                    decisions[key] = session
            for key, trusted in self._session_trust.items():
                if trusted is None:
                    trust.pop(key, None)
                else:
                    trust[key] = trusted
        return decisions, trust

    def _announce(self, before: _View) -> frozenset[str]:
        """Tell the callbacks which identities changed since ``before``."""
        after = self._view()
        affected = _affected(before, after)
        if affected:
            with self._lock:
                callbacks = list(self._callbacks)
            for callback in callbacks:
                try:
                    callback(affected)
                except Exception:
                    logger.exception("a consent change callback failed")
        return affected


def _affected(before: _View, after: _View) -> frozenset[str]:
    (old_roots, old_trust), (new_roots, new_trust) = before, after
    servers = {key[0] for key in old_roots.keys() ^ new_roots.keys()}
    servers.update(key[0] for key in old_roots.keys() & new_roots.keys() if old_roots[key] != new_roots[key])
    servers.update(s for s in old_trust.keys() | new_trust.keys() if old_trust.get(s) != new_trust.get(s))
    return frozenset(servers)
