"""A server described for a person deciding whether to trust it or share folders with it.

Used by every prompt that is not the VS Code extension's own (the ``window/showMessageRequest`` fallback, the
terminal): the product name, the server, where it is defined, and exactly what runs — the resolved executable,
arguments, working directory, environment names (values only where they decide which code runs), the envFile,
the user's environment variables it reads, the URL and header names. Invisible characters are shown escaped.
"""

from __future__ import annotations

import shlex

from host_bridge.hub.models import ServerRef, ServerStatus
from host_bridge.text import visible
from host_bridge.uris import UriError, parse_file_uri

PRODUCT = "MCP Host Bridge"
"""How every prompt names host_bridge, so it cannot be mistaken for the editor's own dialogs."""


def defined_in(ref: ServerRef) -> str:
    """``your settings`` or the config file's path."""
    if ref.source == "settings":
        return "your settings"
    try:
        return visible(parse_file_uri(ref.source))
    except UriError:
        return visible(ref.source)


def server_name(ref: ServerRef) -> str:
    """The server's name in quotes, escaped."""
    return repr(visible(ref.label or ref.id))


def launch_lines(ref: ServerRef) -> list[str]:
    """What runs (or is reached), one fact per line."""
    lines = [f"Defined in: {defined_in(ref)}"]
    if ref.transport == "http":
        lines.append(f"URL: {visible(ref.url or '')}")
        if ref.header_names:
            lines.append("Headers sent: " + ", ".join(visible(n) for n in ref.header_names) + " (values not shown)")
    else:
        command = ref.command or ""
        runs = ref.executable or f"{command} (not found on the server's PATH)"
        words = [runs, *(ref.args or ())]
        lines.append("Runs: " + visible(shlex.join(words)))
        if ref.executable is not None and ref.executable != command:
            lines.append(f"Command as written: {visible(command)}")
        if ref.cwd:
            lines.append(f"Working directory: {visible(ref.cwd)}")
        if ref.env:
            shown = [visible(v.name if v.value is None else f"{v.name}={v.value}") for v in ref.env]
            lines.append("Environment it sets: " + ", ".join(shown))
        if ref.env_file:
            lines.append(f"Environment file: {visible(ref.env_file)}")
        if ref.passes_shared_folders:
            lines.append("Folders you share are passed on its command line (it restarts when they change)")
        if ref.sandbox_setting == "off":
            lines.append("Sandbox: off in its config (it can read and write whatever you can)")
    if ref.env_references:
        names = ", ".join(visible(n) for n in ref.env_references)
        lines.append(f"Reads your environment variables: {names} (their values are sent to the server)")
    return lines


def launch_summary(ref: ServerRef) -> str:
    """:func:`launch_lines` joined into one paragraph."""
    return "; ".join(launch_lines(ref))


def reach_sentence(status: ServerStatus) -> str:
    """How the folders shared with a server reach it now, in words; never claims a folder a server did not get.

    ``sharedRoots`` are only offered: a server that never asks for roots, runs without the sandbox and has no
    ``${hostBridge:sharedFolders}`` has seen none of them, and is not confined to them either.
    """
    ways: list[str] = []
    if "roots" in status.reach and status.roots_asked_at is not None:
        ways.append(f"it asked for them (roots/list, last at {status.roots_asked_at.astimezone():%H:%M:%S})")
    if "launch" in status.reach:
        ways.append("they are on its command line")
    if "sandbox" in status.reach:
        ways.append("its sandbox confines it to them")
    if ways:
        return "folders reach it: " + "; ".join(ways)
    if not status.shared_roots:
        return "nothing is shared with it"
    if status.roots_asked_at is None:
        return "offered, but it has not asked for its roots and nothing else passes them to it"
    return "offered; it asked for roots before they were shared and has not asked again"
