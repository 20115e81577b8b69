"""Server entries that would make host_bridge start itself: ``host-bridge attach`` is an agent's entry, not a server."""

from __future__ import annotations

import re
from collections.abc import Sequence

_SCRIPT_NAMES = frozenset({"host-bridge", "host_bridge"})
"""Names of the console script (and its Windows wrappers, once the suffix is taken off)."""
_MODULES = frozenset({"host_bridge", "host_bridge.cli", "host_bridge.hosts.cli", "host_bridge.__main__"})
"""Modules that run host_bridge's command line with ``python -m``."""
_WRAPPER_SUFFIXES = (".exe", ".cmd", ".bat", ".py")


def attach_loop(command: str, args: Sequence[str]) -> str | None:
    """Why a stdio entry with ``command`` and ``args`` must not be started by host_bridge, or ``None``.

    It is a loop when host_bridge's command line (the console script, ``python -m host_bridge``, or either behind a
    launcher such as ``uvx`` or ``pipx run``) is asked to ``attach``: host_bridge would connect to itself.
    """
    tokens = [command, *args]
    for index, token in enumerate(tokens):
        name = re.split(r"[\\/]", token)[-1].lower()
        for suffix in _WRAPPER_SUFFIXES:
            name = name.removesuffix(suffix)
        if name not in _SCRIPT_NAMES and token not in _MODULES:
            continue
        rest = [t for t in tokens[index + 1 :] if not t.startswith("-")]
        if rest and rest[0] == "attach":
            return (
                "it runs host_bridge's own `attach`, which connects an agent to a server host_bridge already runs; "
                "host_bridge does not start it (that would connect host_bridge to itself). Keep this entry for your "
                "agent's configuration and define the real server here instead"
            )
    return None
