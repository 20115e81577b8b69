"""The policy as a macOS ``sandbox-exec`` (Seatbelt) profile, and the command wrapped in it.

The profile mirrors the Landlock semantics: everything that is not about files stays allowed (``allow default``);
reading file contents, writing and executing are denied except beneath the policy's paths (the last matching rule
wins in Seatbelt, so the allows come after the denies). Reading metadata (``stat``) stays allowed everywhere, as it
does under Landlock. Paths must be the real paths (``/private/tmp``, not ``/tmp``): Seatbelt matches resolved paths,
and :func:`~host_bridge.sandbox.policy.policy_for_launch` computes canonical ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from host_bridge.sandbox.support import SANDBOX_EXEC

if TYPE_CHECKING:
    from host_bridge.sandbox.policy import SandboxPolicy


def quote(text: str) -> str:
    """``text`` as an SBPL string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sandbox_profile(policy: SandboxPolicy) -> str:
    """The Seatbelt profile text for ``policy`` (``sandbox-exec -p``)."""
    read = [grant.path for grant in policy.read_execute]
    write = [grant.path for grant in policy.read_write]
    lines = [
        "(version 1)",
        ";; host_bridge: one MCP server's file access (generated from its SandboxPolicy)",
        "(allow default)",
        "(deny file-read* file-write* process-exec file-map-executable)",
        "(allow file-read-metadata)",
    ]
    if read:
        lines.append("(allow file-read* process-exec file-map-executable")
        lines += [f"  (subpath {quote(path)})" for path in read]
        lines.append(")")
    lines.append("(allow file-read* file-write* process-exec file-map-executable")
    lines += [f"  (subpath {quote(path)})" for path in write]
    lines.append(")")
    return "\n".join(lines) + "\n"


def wrap_command(policy: SandboxPolicy, command: str, args: Sequence[str]) -> tuple[str, list[str]]:
    """``sandbox-exec -p PROFILE command args``: the command to start instead of ``command args``."""
    return SANDBOX_EXEC, ["-p", sandbox_profile(policy), command, *args]
