"""Which sandbox this machine can enforce, and a sentence saying why (standard library only)."""

from __future__ import annotations

import os
import sys
from typing import Literal

from host_bridge.sandbox.landlock import landlock_abi, unsupported_reason

Mechanism = Literal["landlock", "sandbox-exec", "none"]
"""How a policy is enforced: Landlock on Linux, ``sandbox-exec`` on macOS, or not at all."""

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
"""macOS's (deprecated but still shipped) command that runs a program under a Seatbelt profile."""

WINDOWS_SENTENCE = (
    "The sandbox is not enforced on Windows: MCP servers can read and write every file your account can; "
    "only the folders you share are offered to them."
)


def mechanism_for(platform: str | None = None) -> Mechanism:
    """The mechanism host_bridge uses on ``platform`` (default: this one), whether or not it is usable here."""
    platform = sys.platform if platform is None else platform
    if platform.startswith("linux"):
        return "landlock"
    if platform == "darwin":
        return "sandbox-exec"
    return "none"


def supported(platform: str | None = None) -> tuple[bool, str]:
    """Whether stdio servers can be sandboxed here, and a sentence that says with what, or why not.

    ``platform`` defaults to ``sys.platform``; any other value is answered without probing this machine (the
    Windows and unknown answers need no probe; Linux and macOS are only probed when they are this machine).
    """
    here = platform is None or platform == sys.platform
    platform = sys.platform if platform is None else platform
    mechanism = mechanism_for(platform)
    if mechanism == "landlock":
        if not here:
            return False, "Landlock can only be probed on the Linux machine that runs the server"
        abi = landlock_abi()
        if abi >= 1:
            return True, (
                f"Linux Landlock (ABI {abi}) confines each stdio server's file access to its shared folders, "
                "a private temp folder, and read-only system and runtime paths"
            )
        return False, f"The sandbox is not enforced: {unsupported_reason()}."
    if mechanism == "sandbox-exec":
        if not here:
            return False, "sandbox-exec can only be probed on the Mac that runs the server"
        if os.access(SANDBOX_EXEC, os.X_OK):
            return True, (
                "macOS sandbox-exec confines each stdio server's file access to its shared folders, "
                "a private temp folder, and read-only system and runtime paths"
            )
        return False, f"The sandbox is not enforced: {SANDBOX_EXEC} is missing on this Mac."
    if platform == "win32":
        return False, WINDOWS_SENTENCE
    return False, f"The sandbox is not enforced: host_bridge has no sandbox for {platform}."
