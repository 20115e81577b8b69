"""The words of the consent prompts sent as ``window/showMessageRequest``: action titles and how folders are named.

In every list of actions the first one shares nothing and trusts nothing: editors pre-select the first action (eglot
puts it in the minibuffer, so RET answers it; pickers such as telescope highlight it), so it is what Enter answers.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from host_bridge.roots import VisibleThrough
from host_bridge.text import visible
from host_bridge.uris import UriError, parse_file_uri
from host_bridge.workspace.models import Candidate

NOT_NOW = "Not now"
"""Shares nothing and records nothing (asked again in a later session)."""
ALLOW = "Allow"
ALLOW_SESSION = "Allow for this session"
READ_ONLY = "Allow read only"
READ_ONLY_SESSION = "Allow read only for this session"
DENY = "Deny"
TRUST = "Trust and start"
DONT_TRUST = "Don't trust"
ONE_BY_ONE = "Ask about each folder"
FOLDER_DECISIONS = {
    ALLOW: "allow",
    ALLOW_SESSION: "allowSession",
    READ_ONLY: "allowReadOnly",
    READ_ONLY_SESSION: "allowSessionReadOnly",
    DENY: "deny",
}
"""Action title → decision of a one-folder question ("Allow" shares it to read and write)."""
FOLDER_ACTIONS = [NOT_NOW, DENY, READ_ONLY_SESSION, READ_ONLY, ALLOW_SESSION, ALLOW]
"""A one-folder question's actions, least exposure first."""
TRUST_ACTIONS = [DONT_TRUST, TRUST]
"""A trust question's actions, not trusting first."""


def all_actions(count: int) -> dict[str, str | None]:
    """Action titles for a question about ``count`` folders at once, each saying it covers all of them, least exposure
    first (``None``: share none of them now, record nothing)."""
    return {
        f"Not now (none of the {count})": None,
        f"Deny all {count}": "deny",
        f"Allow all {count} read only": "allowReadOnly",
        f"Allow all {count} for this session": "allowSession",
        f"Allow all {count} folders": "allow",
    }


def folder_text(candidate: Candidate, path: str) -> str:
    """A folder as a prompt names it: its path, and its name when that is not the path's last part."""
    name = visible(candidate.name)
    shown = visible(path)
    return shown if name == shown.rsplit("/", 1)[-1] else f"{shown} ({name})"


def visible_text(seen: tuple[VisibleThrough, ...]) -> str:
    """`` It already sees A (visible through B).``, or nothing."""
    parts: list[str] = []
    for item in seen:
        try:
            folder, parent = visible(parse_file_uri(item.uri)), visible(parse_file_uri(item.through))
        except UriError:
            continue
        parts.append(f"{folder} (visible through {parent})")
    return " It already sees " + ", ".join(parts) + "." if parts else ""


def still_visible_text(uri: str, through: str) -> str:
    """Why a folder that is not shared is still seen by the server, and what hides it."""
    folder, parent = visible(parse_file_uri(uri)), visible(parse_file_uri(through))
    return (
        f"{folder} is still visible to the server through {parent}, which is shared with it; "
        f"to hide {folder}, stop sharing {parent}."
    )


def visible_path(path: str) -> str:
    """A path as a message shows it."""
    return visible(path)


def decide_command(action: str, handles: Sequence[str], paths: Sequence[str], storage_dir: str | None) -> str:
    """The ``host-bridge consent`` command line that makes a decision from a terminal, quoted for a POSIX shell."""
    words = ["host-bridge", "consent", action, *handles, *paths]
    if storage_dir is not None:
        words += ["--storage-dir", storage_dir]
    return visible(shlex.join(words))
