"""Server identities: who a consent or trust decision belongs to.

A decision belongs to one server as the user saw it: where it is defined (the editor's settings, or the real path
of the config file that defines it), its id there, and the fingerprint of its launch configuration. Two servers
with the same command line are two identities and never share an answer; editing a server's launch configuration
is a new fingerprint, so a new identity, and the user is asked again (docs/security.md B7, G4).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache

from host_bridge.wire import WireModel

SETTINGS_SOURCE = "settings"
"""The ``source`` of servers defined by the user (editor settings, ``--server`` on the command line)."""


class ServerIdentity(WireModel):
    """(where defined, id, launch fingerprint): the key of every consent and trust decision."""

    source: str
    """:data:`SETTINGS_SOURCE`, or the canonical real path of the config file that defines the server."""
    server_id: str
    """The server's id in that source."""
    fingerprint: str
    """``sha256:…`` of its launch configuration (:func:`host_bridge.consent.fingerprint.fingerprint`)."""

    @property
    def key(self) -> str:
        """One opaque string for the whole identity (``identity:<hex>``), used as a map key and on the wire."""
        return _key(self.source, self.server_id, self.fingerprint)

    def describe(self) -> str:
        """``'fs' (user settings)`` or ``'fs' (/path/.vscode/mcp.json)``, for messages."""
        where = "user settings" if self.source == SETTINGS_SOURCE else self.source
        return f"{self.server_id!r} ({where})"


@lru_cache(maxsize=4096)
def _key(source: str, server_id: str, fingerprint: str) -> str:
    # Not cached on the instance: a model copied with other fields would keep the old key.
    text = json.dumps([source, server_id, fingerprint], ensure_ascii=False, separators=(",", ":"))
    return "identity:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
