"""The user's consent as the rest of host_bridge sees it: persisted decisions plus this session's.

Nothing is shared unless the user said so. While the store is blocked (a file from a newer host_bridge,
an unsafe or unreadable file) persisted decisions are ignored, so only "allow for this session" answers
given in this process share anything, and saving a decision raises :class:`ConsentStoreError`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from enum import StrEnum

from host_bridge.consent.store import ConsentStore, ConsentStoreError

logger = logging.getLogger(__name__)

ChangeCallback = Callable[[frozenset[str]], None]
"""Called with the fingerprints whose decisions or trust changed."""


class Decision(StrEnum):
    """The user's answer about sharing one folder with one server."""

    ALLOW = "allow"
    """Share it, now and in later sessions."""
    ALLOW_SESSION = "allowSession"
    """Share it until this sidecar exits; never written to disk."""
    DENY = "deny"
    """Do not share it, and do not ask again."""


_View = tuple[dict[tuple[str, str], Decision], dict[str, bool]]


class ConsentPolicy:
    """Answers "may this server see this folder?" from the store and this session's decisions.

    Keys are (server fingerprint, canonical real path). Thread-safe; change callbacks run in the thread
    that made the change, after the change, outside the policy's lock.
    """

    def __init__(self, store: ConsentStore) -> None:
        self.store = store
        """The durable decisions; call its ``load`` before relying on this policy."""
        self._lock = threading.Lock()
        self._session: set[tuple[str, str]] = set()
        self._callbacks: list[ChangeCallback] = []

    def decision(self, server: str, path: str) -> Decision | None:
        """This session's decision about ``path`` for ``server``, else the persisted one, else ``None``."""
        with self._lock:
            return self._decision(server, path)

    def is_allowed(self, server: str, path: str) -> bool:
        """Whether ``server`` may see ``path`` now; ``False`` unless the user allowed it."""
        return self.decision(server, path) in (Decision.ALLOW, Decision.ALLOW_SESSION)

    def decisions_for(self, server: str) -> dict[str, Decision]:
        """Every decided path of ``server`` and its effective decision."""
        with self._lock:
            decided = {r.path: Decision(r.decision) for r in self.store.roots() if r.server == server}
            decided.update({path: Decision.ALLOW_SESSION for fp, path in self._session if fp == server})
            return decided

    def set(self, server: str, path: str, decision: Decision, *, server_id: str = "") -> None:
        """Record the user's ``decision``; it replaces any earlier one for the key, persisted or not.

        ``deny`` takes effect in this process even when saving it fails. Raises
        :class:`ConsentStoreError` when an ``allow`` or ``deny`` cannot be saved, or when an
        ``allowSession`` would need to remove a saved decision and cannot.
        """
        key = (server, path)
        decision = Decision(decision)

        def apply() -> None:
            if decision is Decision.DENY:
                self._session.discard(key)
                self.store.set_root(server, path, "deny", server_id=server_id)
            elif decision is Decision.ALLOW:
                self.store.set_root(server, path, "allow", server_id=server_id)
                self._session.discard(key)
            else:
                # Only touch the file when this process knows of a saved decision to replace.
                if not self.store.blocked and self.store.root(server, path) is not None:
                    self.store.set_root(server, path, None)
                self._session.add(key)

        self._change(apply)

    def forget(self, server: str, path: str) -> None:
        """Remove every decision about ``path`` for ``server``, so the user is asked again.

        The session decision goes even when removing the saved one fails with :class:`ConsentStoreError`.
        """

        def apply() -> None:
            self._session.discard((server, path))
            self.store.set_root(server, path, None)

        self._change(apply)

    def trusted(self, server: str) -> bool | None:
        """Whether the user trusts the workspace-defined ``server``; ``None`` if never asked (or blocked)."""
        record = self.store.trust_record(server)
        return None if record is None else record.trusted

    def set_trust(self, server: str, trusted: bool | None, *, server_id: str = "") -> None:
        """Persist the trust answer for ``server`` (``None`` forgets it); may raise ConsentStoreError."""
        self._change(lambda: self.store.set_trust(server, trusted, server_id=server_id))

    def reload(self) -> bool:
        """Pick up changes other processes made to the store file; whether any decision changed."""
        return bool(self._change(self.store.reload))

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call ``callback`` after decisions or trust change (by this policy or on reload).

        It receives the affected server fingerprints. Returns a function that unregisters it.
        """
        with self._lock:
            self._callbacks.append(callback)

        def unregister() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return unregister

    def _decision(self, server: str, path: str) -> Decision | None:
        if (server, path) in self._session:
            return Decision.ALLOW_SESSION
        record = self.store.root(server, path)
        return None if record is None else Decision(record.decision)

    def _view(self) -> _View:
        decisions = {(r.server, r.path): Decision(r.decision) for r in self.store.roots()}
        decisions.update(dict.fromkeys(self._session, Decision.ALLOW_SESSION))
        return decisions, {t.server: t.trusted for t in self.store.trust_records()}

    def _change(self, apply: Callable[[], object]) -> frozenset[str]:
        """Run ``apply`` under the lock, then tell callbacks which servers it affected; re-raise its error."""
        error: ConsentStoreError | None = None
        with self._lock:
            before = self._view()
            try:
                apply()
            except ConsentStoreError as caught:
                error = caught
            after = self._view()
            callbacks = list(self._callbacks)
        affected = _affected(before, after)
        if affected:
            for callback in callbacks:
                try:
                    callback(affected)
                except Exception:
                    logger.exception("a consent change callback failed")
        if error is not None:
            raise error
        return affected


def _affected(before: _View, after: _View) -> frozenset[str]:
    (old_roots, old_trust), (new_roots, new_trust) = before, after
    servers = {key[0] for key in old_roots.keys() ^ new_roots.keys()}
    servers.update(key[0] for key in old_roots.keys() & new_roots.keys() if old_roots[key] != new_roots[key])
    servers.update(s for s in old_trust.keys() | new_trust.keys() if old_trust.get(s) != new_trust.get(s))
    return frozenset(servers)
