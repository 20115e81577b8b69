"""What the operating system confines for one server on this machine, channel by channel, in words for status.

Files are the sandbox's first job (:mod:`host_bridge.sandbox.policy`); this module says what else a confined server
could use to reach the rest of the machine, and whether this kernel refuses it: signals, abstract and named UNIX
sockets, TCP, other network protocols, the user's terminals and shared memory, capabilities of a root server, and
files in its writable folders that other programs later run (planted files). Nothing here is a check in Python: each
"refused" names the kernel mechanism that refuses it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

from host_bridge.sandbox import mounts, seccomp
from host_bridge.sandbox.landlock import NET_ABI, RESOLVE_UNIX_ABI, SCOPE_ABI
from host_bridge.sandbox.policy import SandboxPolicy
from host_bridge.wire import WireModel

ChannelName = Literal[
    "signals", "abstractSockets", "namedSockets", "tcp", "otherNetwork", "terminals", "sharedMemory", "plantedFiles"
]
"""What a confined server might use to reach outside its sandbox."""
ChannelState = Literal["refused", "allowed", "notConfined"]
"""``refused`` by the kernel; ``allowed`` by the user's setting; ``notConfined``: this machine cannot refuse it."""

OTHER_PROGRAMS = "it can talk to other programs running as you: Docker, ssh-agent, the session bus"
"""What letting a server reach UNIX sockets means, said wherever it is allowed."""


class Channel(WireModel):
    """One way out of the sandbox and what this machine does about it."""

    name: ChannelName
    """Which channel."""
    state: ChannelState
    """Refused by the kernel, allowed by the user's setting, or not confined here."""
    sentence: str
    """What happens, and by which mechanism or why not."""


def channels(policy: SandboxPolicy, *, mount_layer: bool | None = None) -> tuple[Channel, ...]:
    """The channels of an enforced Linux (Landlock) ``policy`` on this machine; empty for any other policy (macOS and
    unenforced policies are described by their summary). ``mount_layer``: whether the server started in the mount
    layer (default: whether this machine has one)."""
    if not policy.enforced or policy.mechanism != "landlock":
        return ()
    abi = policy.abi or 0
    layer_missing = mounts.unavailable_reason()
    layer = layer_missing is None if mount_layer is None else mount_layer
    why_no_layer = layer_missing or "nothing in its writable folders needed guarding when it started"
    filter_missing = seccomp.unavailable_reason()
    found: list[Channel] = []

    def add(name: ChannelName, state: ChannelState, sentence: str) -> None:
        found.append(Channel(name=name, state=state, sentence=sentence))

    if abi >= SCOPE_ABI:
        add("signals", "refused", "signals to processes outside its sandbox are refused (Landlock signal scope)")
    else:
        add(
            "signals",
            "notConfined",
            f"it can signal your other processes: this kernel's Landlock (ABI {abi}) has "
            f"no signal scope (ABI {SCOPE_ABI}, Linux 6.12)",
        )
    if policy.unix_sockets:
        add("abstractSockets", "allowed", f"UNIX sockets are allowed for it by your setting: {OTHER_PROGRAMS}")
        add("namedSockets", "allowed", f"UNIX sockets are allowed for it by your setting: {OTHER_PROGRAMS}")
    else:
        if abi >= SCOPE_ABI:
            add("abstractSockets", "refused", "abstract UNIX sockets of other programs are refused (Landlock scope)")
        elif filter_missing is None:
            add("abstractSockets", "refused", "UNIX sockets are refused (seccomp)")
        else:
            add(
                "abstractSockets",
                "notConfined",
                f"it can connect to abstract UNIX sockets: no Landlock scope "
                f"(ABI {abi}) and no seccomp filter ({filter_missing})",
            )
        if abi >= RESOLVE_UNIX_ABI:
            add("namedSockets", "refused", "named UNIX sockets of other programs are refused (Landlock ABI 9)")
        elif filter_missing is None:
            add("namedSockets", "refused", "UNIX sockets are refused (seccomp; Landlock controls them from ABI 9)")
        else:
            add(
                "namedSockets",
                "notConfined",
                f"it can connect to named UNIX sockets (the session bus, ssh-agent, "
                f"Docker): Landlock ABI {abi} cannot refuse them and there is no seccomp filter ({filter_missing})",
            )
    if policy.network:
        add("tcp", "allowed", "its network is on (your setting)")
        add("otherNetwork", "allowed", "its network is on (your setting)")
    else:
        if abi >= NET_ABI:
            add("tcp", "refused", "TCP connections and binding to a port are refused (Landlock)")
        else:
            add(
                "tcp",
                "notConfined",
                f"its network is off but this kernel's Landlock (ABI {abi}) has no TCP rules "
                f"(ABI {NET_ABI}, Linux 6.7)",
            )
        if filter_missing is None:
            add("otherNetwork", "refused", "UDP, raw and other sockets and TCP Fast Open are refused (seccomp)")
        else:
            add(
                "otherNetwork",
                "notConfined",
                f"its network is off but UDP and other protocols stay open: no seccomp filter ({filter_missing})",
            )
    if layer:
        add(
            "terminals",
            "refused",
            "no terminal of yours is reachable: it has a private /dev with its own "
            "pseudo-terminals, and no capability to inject input",
        )
        add("sharedMemory", "refused", "its /dev/shm is private (a mount namespace)")
    else:
        add(
            "terminals", "refused", "no terminal device is granted (Landlock), and it has no capability to inject input"
        )
        add(
            "sharedMemory",
            "refused",
            f"/dev/shm is not granted (Landlock), so POSIX shared memory and semaphores "
            f"fail in it (no private /dev: {why_no_layer})",
        )
    writable = [grant.path for grant in policy.read_write if grant.kind == "shared"]
    if not writable:
        add("plantedFiles", "refused", "it writes no shared folder")
    elif layer:
        missing = [path for path in mounts.planted_paths(writable) if not os.path.exists(path)]
        sentence = ".git/hooks, .git/config, .vscode, .mcp.json and .envrc of its writable folders are read only "
        sentence += "(mount namespace)"
        if missing:
            sentence += f"; it could still create those that do not exist yet: {_short(missing)}"
        add("plantedFiles", "refused" if not missing else "notConfined", sentence)
    elif layer_missing is None:
        add(
            "plantedFiles",
            "notConfined",
            f"none of .git/hooks, .git/config, .vscode, .mcp.json and .envrc existed in "
            f"{', '.join(writable)} when it started, so none is bound read-only and it could create them (git, "
            "editors and direnv run them outside any sandbox)",
        )
    else:
        add(
            "plantedFiles",
            "notConfined",
            f"it can write .git/hooks, .git/config, .vscode, .mcp.json and .envrc in "
            f"{', '.join(writable)}, which git, editors and direnv run outside any sandbox: no mount layer "
            f"({why_no_layer})",
        )
    return tuple(found)


def not_confined_sentence(found: Sequence[Channel]) -> str | None:
    """One sentence naming what this machine does not confine, or ``None``."""
    open_ = [channel.sentence for channel in found if channel.state == "notConfined"]
    if not open_:
        return None
    return "Not confined on this machine: " + "; ".join(open_) + "."


def _short(paths: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")
