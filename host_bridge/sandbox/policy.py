"""The sandbox policy of one stdio server launch: which paths it may read and execute, and which it may write.

:func:`policy_for_launch` computes it from what is about to run and from the user's consent. Outside system and
runtime paths, which are read-only, a server's file access is exactly its consented folders and a private temp
folder (and a package runner's private cache); everything else, the rest of the user's home included, is refused.
The same policy drives Landlock on Linux (:mod:`host_bridge.sandbox.apply`), a ``sandbox-exec`` profile on macOS
(:mod:`host_bridge.sandbox.macos`), and the sentence status shows where nothing is enforced (Windows).

The parts: system paths and why each is there (:mod:`~host_bridge.sandbox.system_paths`); the runtime's package tree
(:mod:`~host_bridge.sandbox.runtime`); package runners' private folders (:mod:`~host_bridge.sandbox.runners`); the
sentences (:mod:`~host_bridge.sandbox.words`).

Nothing in a policy is computed from what the server or a repository can write: not from ``pyvenv.cfg``'s ``home``,
not from package markers above a shared or workspace folder, not from a cache variable in the server's entry.
And nothing grows by itself: with ``runtime_limit`` (the runtime grants of the server's first start), a later start
whose runtime would reach further (its files were changed) gets the new paths only when the user allows them.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from pydantic import Field

from host_bridge.sandbox.grants import GrantKind, PathGrant, canonical, is_home_or_above, within
from host_bridge.sandbox.landlock import landlock_abi
from host_bridge.sandbox.runners import plan_runners, runners_for
from host_bridge.sandbox.runtime import Runtime
from host_bridge.sandbox.support import WINDOWS_SENTENCE, Mechanism, mechanism_for, supported
from host_bridge.sandbox.system_paths import (
    LINUX_DEVICES,
    LINUX_SYSTEM_READ,
    MACOS_DEVICES,
    MACOS_SYSTEM_READ,
    git_user_config,
    linked_config,
)
from host_bridge.sandbox.words import container_warning, summary
from host_bridge.wire import WireModel

__all__ = ["GrantKind", "PathGrant", "SandboxPolicy", "iter_paths", "make_private_tmp", "policy_for_launch"]

RUNTIME_KINDS: frozenset[GrantKind] = frozenset({"runtime", "package", "hostBridge"})
"""Grants that come from what the server runs (and so from files), not from consent or the system."""


class SandboxPolicy(WireModel):
    """What one stdio server may touch on the file system, how that is enforced, and a sentence saying so."""

    enforced: bool
    """The policy is applied by the OS when the server starts (``False``: it only describes)."""
    requested: bool
    """The server's setting asked for enforcement (``enforce``); ``False`` for ``off``."""
    mechanism: Mechanism
    """What enforces it here: ``landlock``, ``sandbox-exec``, or ``none``."""
    abi: int | None = None
    """The Landlock ABI version the policy was computed for (Linux only)."""
    read_execute: tuple[PathGrant, ...] = ()
    """Paths the server may read and execute, not write."""
    read_write: tuple[PathGrant, ...] = ()
    """Paths the server may read, write, create in, remove from and execute: its consented folders, the private
    temp folder, device nodes and a package runner's private folders."""
    private_tmp: str | None = None
    """The server's own temp folder; ``TMPDIR``, ``TMP`` and ``TEMP`` point at it (:meth:`environment`)."""
    variables: dict[str, str] = Field(default_factory=dict[str, str])
    """Variables set for the server by the sandbox (a package runner's private folders), over its own."""
    runners: tuple[str, ...] = ()
    """The package runners that start it (``npm``, ``uv``, ``pipx`` …), each given a private folder."""
    withheld: tuple[PathGrant, ...] = ()
    """Runtime paths left out because its first start did not need them (files it runs were changed since): they
    are granted only when the user allows them."""
    summary: str
    """One or two sentences for status and the audit log."""
    warnings: tuple[str, ...] = ()
    """Things the user should know, e.g. a runtime path that contains a folder they did not share."""
    network: bool = True
    """Its network is on (``"network": "on"``); off: the kernel refuses it TCP (and, with seccomp, every other
    protocol but UNIX sockets and netlink)."""
    unix_sockets: bool = False
    """The user let it reach other programs' UNIX sockets (Docker, ssh-agent, the session bus); otherwise the kernel
    refuses them where it can, and :data:`SOCKET_VARIABLES` are not passed."""

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with the temp-folder variables pointing at :attr:`private_tmp` and :attr:`variables` set, and,
        when enforced without :attr:`unix_sockets`, without :data:`SOCKET_VARIABLES`."""
        result = dict(env)
        if self.private_tmp is not None:
            for name in TMP_VARIABLES:
                result[name] = self.private_tmp
        result.update(self.variables)
        if self.enforced and not self.unix_sockets:
            for name in SOCKET_VARIABLES:
                result.pop(name, None)
        return result

    def allows(self, path: str | Path, *, write: bool = False) -> bool:
        """Whether the policy grants ``path`` (read, or ``write``); a policy that is not enforced allows everything.

        ``path`` is compared as given and with symlinks resolved; containment is by whole path components.
        """
        if not self.enforced:
            return True
        grants = self.read_write if write else (*self.read_write, *self.read_execute)
        candidates = {os.path.abspath(path), os.path.realpath(path)}
        return any(within(candidate, grant.path) for candidate in candidates for grant in grants)

    def runtime_paths(self) -> tuple[str, ...]:
        """The granted paths that come from what it runs (its runtime and package trees)."""
        return tuple(g.path for g in self.read_execute if g.kind in RUNTIME_KINDS)

    def to_json(self) -> str:
        """The policy as wire JSON (camelCase), the form ``python -m host_bridge.sandbox.run`` takes."""
        return self.model_dump_json(by_alias=True)


TMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")
"""The environment variables that point programs at a temp folder."""

SOCKET_VARIABLES = ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS")
"""Environment variables that point at another program's UNIX socket (ssh-agent, the session bus): not passed to a
confined server unless the user let it reach other programs' sockets."""


def policy_for_launch(
    executable: str | Path,
    args: Sequence[str],
    *,
    cwd: str | Path | None,
    env: Mapping[str, str],
    shared_folders: Iterable[str | Path],
    home: str | Path,
    private_tmp: str | Path | None,
    enforce: bool = True,
    allowed_read: Iterable[str | Path] = (),
    workspace_folders: Iterable[str | Path] = (),
    platform: str | None = None,
    runner_home: str | Path | None = None,
    entry_env: Mapping[str, str] | None = None,
    user_env: Mapping[str, str] | None = None,
    runtime_limit: Iterable[str] | None = None,
    read_only_folders: Iterable[str | Path] = (),
    network: bool = True,
    unix_sockets: bool = False,
) -> SandboxPolicy:
    """The policy for starting ``executable`` (resolved on the server's ``PATH``; a bare name is looked up there) with
    ``args``.

    ``cwd`` and ``env`` are the server's own (``env`` is the full environment it will get; ``PATH`` there finds a
    script's interpreter). ``shared_folders`` are its consented folders (read-write), ``home`` the user's home,
    ``private_tmp`` its own temp folder (read-write; make it with :func:`make_private_tmp`). ``enforce`` is the
    server's setting; enforcement also needs the OS to support it (:func:`~host_bridge.sandbox.support.supported`).
    ``allowed_read`` are extra read-only paths the user allowed after a refusal. ``workspace_folders`` are folders
    the user has *not* necessarily shared; a runtime grant that would expose one of them gets a warning, and no
    package root is looked for above one. ``platform`` defaults to this one (other values compute the paths without
    probing this machine's kernel).

    ``runner_home`` is the server's own folder for a package runner's caches (kept between its starts; default: a
    folder inside ``private_tmp``). ``entry_env`` is what the server's entry sets (a runner variable there is
    replaced, and the user told); ``user_env`` the user's own environment (default: this process's).
    ``runtime_limit`` are the runtime paths of its first start: runtime grants outside them are withheld.

    ``read_only_folders`` are consented folders shared read only (in its roots, granted read-only); they are not the
    ``allowed_read`` paths, which are never shared. ``network`` and ``unix_sockets`` are the server's settings (see
    :attr:`SandboxPolicy.network`, :attr:`SandboxPolicy.unix_sockets`).
    """
    platform = sys.platform if platform is None else platform
    mechanism = mechanism_for(platform)
    home_path = Path(os.path.abspath(home))
    tmp = canonical(private_tmp) if private_tmp is not None else None
    shared = [canonical(folder) for folder in shared_folders]
    shared_read = [folder for folder in map(canonical, read_only_folders) if folder not in shared]
    if platform == "win32":
        return SandboxPolicy(
            enforced=False,
            requested=enforce,
            mechanism="none",
            read_write=tuple(PathGrant(path=str(f), kind="shared", why="a folder you shared") for f in shared),
            private_tmp=None if tmp is None else str(tmp),
            summary=WINDOWS_SENTENCE,
        )

    writable: list[PathGrant] = [
        PathGrant(path=str(folder), kind="shared", why="a folder you shared") for folder in shared
    ]
    if tmp is not None:
        writable.append(PathGrant(path=str(tmp), kind="tmp", why="the server's private temp folder"))
    readable: list[PathGrant] = [
        PathGrant(path=str(folder), kind="shared", why="a folder you shared read only") for folder in shared_read
    ]
    if platform == "darwin":
        readable += [PathGrant(path=p, kind="system", why=why) for p, why in MACOS_SYSTEM_READ]
        writable += [PathGrant(path=p, kind="device", why="a device") for p in MACOS_DEVICES]
    else:
        readable += [PathGrant(path=p, kind="system", why=why) for p, why in LINUX_SYSTEM_READ]
        readable += linked_config()
        writable += [PathGrant(path=p, kind="device", why="a device") for p in LINUX_DEVICES]
    readable += git_user_config(home_path, os.environ if user_env is None else user_env)

    workspace = [canonical(folder) for folder in workspace_folders]
    boundaries = [*shared, *shared_read, *workspace, *([tmp] if tmp is not None else [])]
    runtime = Runtime(home_path, env, cwd, boundaries)
    program = str(executable)
    if os.sep not in program:
        program = shutil.which(program, path=env.get("PATH", os.defpath)) or program
    runtime.add_executable(Path(os.path.abspath(program)), depth=0)
    runtime.add_program_files(Path(program).name, args)
    consented = [str(folder) for folder in (*shared, *shared_read, *([tmp] if tmp is not None else []))]
    limit = None if runtime_limit is None else (*runtime_limit, *consented)
    kept, withheld = _limit(runtime.read, limit)
    readable += kept

    runners = runners_for(runtime.names)
    private = canonical(runner_home) if runner_home is not None else (tmp / "runner" if tmp is not None else None)
    plan = plan_runners(runners, private, home_path, entry_env or {})
    readable += plan.readable
    writable += plan.writable
    why = "you let it read this after a refusal (not shared)"
    readable += [PathGrant(path=str(canonical(p)), kind="allowed", why=why) for p in allowed_read]

    read_execute, read_write = _minimal(readable, writable)
    warnings = [*plan.warnings, *_warnings(read_execute, read_write, [*shared, *shared_read], home_path, workspace)]
    if withheld:
        warnings.append(
            "Not granted because its first start did not need them (a file it runs changed since): "
            + ", ".join(g.path for g in withheld)
            + "; allow them if you expect this."
        )
    container = container_warning(runtime.names)
    if container is not None:
        warnings.append(container)

    ok, reason = supported(platform if platform != sys.platform else None)
    enforced = enforce and ok
    abi = landlock_abi() if mechanism == "landlock" and platform == sys.platform else None
    policy = SandboxPolicy(
        enforced=enforced,
        requested=enforce,
        mechanism=mechanism if enforced else "none",
        abi=abi if enforced else None,
        read_execute=read_execute,
        read_write=read_write,
        private_tmp=None if tmp is None else str(tmp),
        variables=plan.environment if enforced else {},
        runners=plan.runners,
        withheld=tuple(withheld),
        summary="",
        warnings=tuple(dict.fromkeys(warnings)),
        network=network,
        unix_sockets=unix_sockets,
    )
    return policy.model_copy(update={"summary": summary(policy, shared, home_path, reason, shared_read)})


def make_private_tmp(server_id: str, parent: str | Path | None = None) -> Path:
    """A new, empty temp folder (mode 0700) for one server start; the caller removes it once the server is gone."""
    import tempfile

    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", server_id)[:40] or "server"
    return Path(tempfile.mkdtemp(prefix=f"host-bridge-{safe}-", dir=None if parent is None else str(parent)))


def _limit(grants: list[PathGrant], limit: Iterable[str] | None) -> tuple[list[PathGrant], list[PathGrant]]:
    """``grants`` split into those within ``limit`` (all of them without one) and those withheld; a grant of a path
    that does not exist is dropped later anyway."""
    if limit is None:
        return grants, []
    allowed = tuple(limit)
    kept: list[PathGrant] = []
    withheld: list[PathGrant] = []
    for grant in grants:
        inside = any(within(grant.path, path) for path in allowed) or not os.path.lexists(grant.path)
        (kept if inside else withheld).append(grant)
    return kept, withheld


def _minimal(
    readable: list[PathGrant], writable: list[PathGrant]
) -> tuple[tuple[PathGrant, ...], tuple[PathGrant, ...]]:
    """Drop grants covered by another (a read grant beneath a write grant, or beneath another read grant), and
    system, device and runtime paths that do not exist; consented folders and the temp folder are always kept."""

    def exists(grant: PathGrant) -> bool:
        return grant.kind in ("shared", "tmp") or grant.create or os.path.lexists(grant.path)

    write = _dedupe([g for g in writable if exists(g)], ())
    read = _dedupe([g for g in readable if exists(g)], write)
    return tuple(read), tuple(write)


def _dedupe(grants: list[PathGrant], covering: Iterable[PathGrant]) -> list[PathGrant]:
    kept: list[PathGrant] = []
    covered = [grant.path for grant in covering]
    for grant in sorted(grants, key=lambda g: (len(Path(g.path).parts), g.path)):
        if any(within(grant.path, other) for other in covered):
            continue
        kept.append(grant)
        covered.append(grant.path)
    order = {id(grant): index for index, grant in enumerate(grants)}
    return sorted(kept, key=lambda g: order[id(g)])


def _warnings(
    read: Iterable[PathGrant],
    write: Iterable[PathGrant],
    shared: Sequence[Path],
    home: Path,
    workspace_folders: Sequence[Path],
) -> list[str]:
    warnings: list[str] = []
    for folder in shared:
        if is_home_or_above(folder, home):
            warnings.append(
                f"{folder} is shared, which holds your whole home folder ({home}), secrets such as ~/.ssh included."
            )
    for grant in (*read, *write):
        if grant.kind in ("shared", "tmp", "system", "device"):
            continue
        for folder in workspace_folders:
            if any(within(str(folder), str(s)) for s in shared):
                continue
            if within(str(folder), grant.path) or within(grant.path, str(folder)):
                warnings.append(
                    f"The server can read {grant.path} ({grant.why}), which is or contains {folder}; "
                    "that folder is not shared with it."
                )
    return warnings


def iter_paths(policy: SandboxPolicy) -> Iterator[tuple[str, bool]]:
    """Every granted path with whether it is writable, read-write grants first."""
    for grant in policy.read_write:
        yield grant.path, True
    for grant in policy.read_execute:
        yield grant.path, False
