"""The words of the consent prompts sent as ``window/showMessageRequest``: action titles and how folders are named."""

from __future__ import annotations

from host_bridge.roots import VisibleThrough
from host_bridge.text import visible
from host_bridge.uris import UriError, parse_file_uri
from host_bridge.workspace.models import Candidate

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
FOLDER_ACTIONS = [ALLOW, ALLOW_SESSION, READ_ONLY, READ_ONLY_SESSION, DENY]
"""A one-folder question's actions."""


def all_actions(count: int) -> dict[str, str]:
    """Action titles for a question about ``count`` folders at once, each saying it covers all of them."""
    return {
        f"Allow all {count} folders": "allow",
        f"Allow all {count} for this session": "allowSession",
        f"Allow all {count} read only": "allowReadOnly",
        f"Deny all {count}": "deny",
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
