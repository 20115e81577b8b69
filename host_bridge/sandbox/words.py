"""What a sandbox policy is, in sentences: status, the audit log and the terminal say exactly this.

Per operating system and kernel: what the sandbox confines (files: what the server may write, what it may read) and
what it does not (what lies outside files on this machine), in English that reads right for no, one or many
folders.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from host_bridge.sandbox.policy import SandboxPolicy

CONTAINER_CLIENTS = frozenset({"docker", "podman", "nerdctl"})
"""Clients that start a server in a container run by a daemon (or a separate runtime), outside this sandbox."""


def listing(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (empty for none)."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def folders_phrase(folders: Sequence[str]) -> str:
    """The shared folders as the object of "it can write only …": none, one, or many, in correct English."""
    if not folders:
        return "its private temp folder (no folder is shared with it)"
    if len(folders) == 1:
        return f"the folder you shared, {folders[0]}, and its private temp folder"
    return f"the {len(folders)} folders you shared, {listing(list(folders))}, and its private temp folder"


def unconfined(policy: SandboxPolicy) -> str:
    """What this sandbox leaves open outside files, in one sentence, where no channel-by-channel account exists
    (macOS); empty on Linux, where :mod:`host_bridge.sandbox.confinement` says it per channel, and when it is not
    enforced."""
    if not policy.enforced or policy.mechanism != "sandbox-exec":
        return ""
    if policy.network:
        return " It is not confined outside files: it can use the network and talk to other programs running as you."
    return (
        " It is not confined outside files: its network is set off, but that is not enforced on macOS, and it can"
        " talk to other programs running as you."
    )


def summary(
    policy: SandboxPolicy, shared: Sequence[Path], home: Path, reason: str, shared_read: Sequence[Path] = ()
) -> str:
    """The status sentence for ``policy``: who confines what, what it may write and read, what is left open.
    ``shared_read`` are the folders shared with it read only."""
    if not policy.requested:
        return "The sandbox is off for this server (its setting): it can read and write every file your account can."
    if not policy.enforced:
        return reason
    how = f"Linux Landlock (ABI {policy.abi})" if policy.mechanism == "landlock" else "macOS sandbox-exec"
    runtime = [g.path for g in policy.read_execute if g.kind not in ("system", "shared", "allowed")]
    allowed = [g.path for g in policy.read_execute if g.kind == "allowed"]
    caches = [g.path for g in policy.read_write if g.kind == "cache"]
    text = f"{how} confines this server's files: it can write only {folders_phrase([str(f) for f in shared])}"
    if caches:
        runners = listing(list(policy.runners)) or "its package runner"
        text += f", and a private cache for {runners} ({', '.join(caches)})"
    readable = ["system folders"]
    if shared_read:
        readable.append(f"{listing([str(folder) for folder in shared_read])} (shared read only)")
    if runtime:
        readable.append(f"its runtime ({', '.join(runtime)})")
    if allowed:
        readable.append(f"what you let it read after a refusal, not shared ({', '.join(allowed)})")
    text += f"; it can read {listing(readable)}; everything else, the rest of {home} included, is refused."
    return text + unconfined(policy)


def container_warning(names: Iterable[str]) -> str | None:
    """What the sandbox does and does not confine when the server is a container client (``docker run -i …``)."""
    clients = sorted(CONTAINER_CLIENTS.intersection(names))
    if not clients:
        return None
    client = clients[0]
    return (
        f"It runs in a container that {client} starts: the sandbox confines the {client} client on this machine, "
        "not the container. What the container can reach is what its command line gives it (its -v and --mount "
        "folders, its network, its privileges), and the container daemon acts for every program that can reach "
        "its socket; the folders you share are not what confines it."
    )
