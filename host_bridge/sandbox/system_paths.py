"""The system paths a sandboxed server may use on Linux and macOS, and why each is there.

Why each Linux path is there:

* ``/usr``, ``/bin``, ``/sbin``, ``/lib*``: programs and shared libraries; nothing in them is the user's.
* ``/etc``: configuration that runtimes and the C library read (CA certificates, DNS, users, time zones). Its
  secrets (``/etc/shadow`` …) stay protected by their file modes, as without a sandbox; the sandbox adds nothing
  there for a root-run server.
* ``/proc/self`` (resolved when the sandbox is applied, so it is the server's own process), the system-wide
  information files runtimes read (``cpuinfo``, ``meminfo``, ``stat``, ``sys/`` …), and ``/sys`` (CPU and memory
  limits). Not the rest of ``/proc``: Landlock's ptrace rule still lets a sandboxed process open other processes'
  ``environ`` and ``maps`` (seen on Linux 6.18), and another process's environment can hold secrets. A process the
  server starts cannot read its own ``/proc/<pid>`` (a rule names one process); runtimes cope (tested with npx).
* ``/nix/store``: the system's programs on NixOS (world-readable by design, so it holds no secrets).
* ``/opt`` is *not* granted: it holds unrelated third-party software; a server that runs from it gets its own
  install prefix through the runtime rule (:mod:`host_bridge.sandbox.runtime`).
* Devices, read and write: ``/dev/null``, ``zero``, ``full``, ``random`` and ``urandom``. Not the terminals
  (``/dev/tty``, ``/dev/pts``, ``/dev/ptmx``): a server talks over pipes, and another terminal of the user's is
  somewhere to type commands into. Not ``/dev/shm`` either: it is shared by every program of the user. Where a
  mount namespace is available (:mod:`host_bridge.sandbox.mounts`) the server gets a private ``/dev`` instead, whose
  terminals and ``shm`` are its own, and those are granted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from host_bridge.sandbox.grants import PathGrant, canonical, within

LINUX_SYSTEM_READ = (
    ("/usr", "programs and libraries"),
    ("/bin", "programs"),
    ("/sbin", "programs"),
    ("/lib", "libraries"),
    ("/lib32", "libraries"),
    ("/lib64", "libraries"),
    ("/libx32", "libraries"),
    ("/etc", "system configuration (certificates, DNS, users, time zones)"),
    ("/proc/self", "the server's own process information"),
    ("/proc/cpuinfo", "CPU information"),
    ("/proc/meminfo", "memory information"),
    ("/proc/stat", "CPU times"),
    ("/proc/loadavg", "the load average"),
    ("/proc/uptime", "the uptime"),
    ("/proc/version", "the kernel version"),
    ("/proc/filesystems", "the file system types"),
    ("/proc/sys", "kernel settings (read only)"),
    ("/sys", "CPU and memory limits"),
    ("/nix/store", "system programs (NixOS)"),
)
"""Read-only system paths on Linux, with why (the module docstring argues each)."""

LINUX_DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
)
"""Device nodes a server may read and write on Linux (a private ``/dev`` adds its own terminals and ``shm``)."""

LINUX_LINKED_CONFIG = ("/etc/resolv.conf", "/etc/hosts", "/etc/localtime", "/etc/nsswitch.conf")
"""Files in ``/etc`` that are often symlinks out of it (``/run/systemd/resolve/…``); their targets are granted."""

MACOS_SYSTEM_READ = (
    ("/usr", "programs and libraries"),
    ("/bin", "programs"),
    ("/sbin", "programs"),
    ("/System", "the operating system"),
    ("/Library", "system-wide frameworks and preferences (not ~/Library)"),
    ("/private/etc", "system configuration"),
    ("/private/var/db/timezone", "time zones"),
    ("/opt/homebrew", "Homebrew's programs and libraries"),
    ("/dev", "device nodes (read only; writes go to the nodes below)"),
)
"""Read-only system paths on macOS."""

MACOS_DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/dtracehelper")
"""Device nodes a server may read and write on macOS: no terminal (``/dev/tty``, ``/dev/ttys*``, ``/dev/ptmx``)."""


def linked_config() -> list[PathGrant]:
    """The targets of the files in ``/etc`` that are symlinks out of it (:data:`LINUX_LINKED_CONFIG`)."""
    grants: list[PathGrant] = []
    for link in LINUX_LINKED_CONFIG:
        target = os.path.realpath(link)
        if target != link and not within(target, "/etc") and not within(target, "/usr"):
            grants.append(PathGrant(path=target, kind="system", why=f"the target of {link}"))
    return grants


def git_user_config(home: Path, user_env: Mapping[str, str]) -> list[PathGrant]:
    """git's own per-user settings files, read-only: git stops on a settings file it may not read (it only
    tolerates a missing one), so every git-based server would fail. Credentials live elsewhere and stay refused.

    ``user_env`` is the user's own environment (the sidecar's), never a server entry's ``env``, which a repository
    may write: a path grant is never computed from it."""
    config_home = Path(user_env.get("XDG_CONFIG_HOME") or home / ".config")
    files = [home / ".gitconfig", *(config_home / "git" / name for name in ("config", "ignore", "attributes"))]
    return [
        PathGrant(path=str(canonical(f)), kind="system", why="git's settings (git stops when it cannot read them)")
        for f in files
        if f.is_file()
    ]
