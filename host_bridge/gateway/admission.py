"""Who may use the gateway: processes of this user that ``host-bridge attach`` started, never an MCP server.

A connection is admitted only when all of these hold:

* **Same user.** The peer's user id (``SO_PEERCRED`` on Linux) is this process's; the socket's mode says the same
  where it is a file.
* **Not a server's process.** Neither the peer nor any of its ancestors is, or leads, one of the process groups the
  hub started servers in (:func:`host_bridge.hub.process_groups.live_groups`): a server, its children and whatever
  they start in their own session are refused, sandboxed or not. A process that daemonizes twice (reparented to
  ``init``) escapes this check by design; the two below still hold for it.
* **The sidecar's secret.** The hello carries the secret this sidecar wrote into its registry entry
  (:class:`host_bridge.gateway.registry.SidecarEntry`), in the storage directory's ``gateway`` folder, which no
  sandbox policy grants: ``attach`` reads it there, a confined server cannot.

And where the kernel can refuse first (Linux with Landlock ABI 6 or later), the gateway listens on an abstract
socket, which a server confined with Landlock's abstract-socket scope cannot connect to at all.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import struct
import sys
from collections.abc import Collection
from dataclasses import dataclass

from host_bridge.sandbox.landlock import landlock_abi

SCOPE_ABI = 6
"""The first Landlock ABI with scopes (abstract UNIX sockets, signals)."""
_MAX_ANCESTORS = 64


@dataclass(frozen=True)
class Peer:
    """The process at the other end of a connection, as the kernel reports it when it connected."""

    pid: int
    """Its process id."""
    uid: int
    """Its user id."""


def new_secret() -> str:
    """A fresh secret for one sidecar's gateway: 256 random bits, URL-safe text."""
    return secrets.token_urlsafe(32)


def secret_matches(given: str | None, expected: str) -> bool:
    """Whether a hello's secret is this sidecar's (compared in constant time)."""
    return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode())


def abstract_sockets_scoped() -> bool:
    """Whether this kernel lets a sandbox refuse abstract UNIX sockets (Linux, Landlock ABI 6 or later): then the
    gateway listens on one."""
    return sys.platform == "linux" and landlock_abi() >= SCOPE_ABI


def peer_of(sock: socket.socket) -> Peer | None:
    """The connecting process (Linux ``SO_PEERCRED``); ``None`` where the platform does not say."""
    if sys.platform != "linux":
        return None
    try:
        data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    pid, uid, _gid = struct.unpack("3i", data)
    return Peer(pid=pid, uid=uid)


def server_group_of(pid: int, groups: Collection[int]) -> int | None:
    """The server process group that ``pid`` belongs to or descends from, or ``None``.

    Walks ``pid`` and its ancestors (``/proc/<pid>/stat``) and compares each one's id and process group with
    ``groups``; a server leads its group, so a descendant that started its own session is still found through its
    parent. Linux only (``None`` elsewhere). A process that vanished meanwhile ends the walk.
    """
    if not groups or sys.platform != "linux":
        return None
    current = pid
    for _ in range(_MAX_ANCESTORS):
        if current <= 1:
            return None
        stat = _stat(current)
        if stat is None:
            return None
        parent, group = stat
        if current in groups:
            return current
        if group in groups:
            return group
        current = parent
    return None


def _stat(pid: int) -> tuple[int, int] | None:
    """``(parent pid, process group)`` of ``pid``; ``None`` when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            raw = file.read()
    except OSError:
        return None
    # The name (field 2) may hold spaces and parentheses: the fields after it start past its last ")".
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(fields[1]), int(fields[2])
    except (IndexError, ValueError):
        return None


def is_own_user(peer: Peer | None) -> bool:
    """Whether ``peer`` runs as this user (``True`` where the platform does not say: the socket's mode decides)."""
    return peer is None or peer.uid == os.getuid()
