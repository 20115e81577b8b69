"""Where host_bridge keeps its files when the editor does not say."""

from __future__ import annotations

import platformdirs


def default_storage_dir() -> str:
    """The platform's per-user data directory for host_bridge (e.g. ``~/.local/share/host-bridge``)."""
    return platformdirs.user_data_dir("host-bridge", appauthor=False)
