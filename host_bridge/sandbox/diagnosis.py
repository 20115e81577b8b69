"""Why a sandboxed server may have failed to start, and what the user can do about it.

A server that exits (or never finishes its handshake) while its sandbox confines it may have been refused something
it needs: runtimes report that as a permission error, or as a module "not found" (Node resolves packages with calls
whose every failure reads as missing). The paths come from two places: its stderr (:func:`~host_bridge.sandbox.
refusals.claimed_paths`), and a read-only probe of the absolute paths on its command line; each counts only when it
exists and lies outside the policy (:func:`~host_bridge.sandbox.refusals.outside`). The kernel's own record (Landlock
ABI 7 can log each denial to the audit log) is not used: reading it needs the audit subsystem and ``CAP_AUDIT_READ``,
which a user session, or root in a container, does not have.

The actions offered are the ones that exist: let it read the package folder that holds a path (read-only), share
the workspace folder that holds one, or turn its sandbox off. Nothing is widened here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from host_bridge.sandbox.grants import is_home_or_above, within
from host_bridge.sandbox.policy import SandboxPolicy
from host_bridge.sandbox.refusals import claimed_paths, outside
from host_bridge.sandbox.runtime import outermost_node_modules
from host_bridge.sandbox.words import listing
from host_bridge.wire import WireModel

MAX_PATHS = 3
"""Most refused paths named (and offered) for one failed start."""

SANDBOX_OFF = "Turn the sandbox off for this server"
"""The title of the action that restarts a server without its sandbox (for this session)."""


class SandboxAction(WireModel):
    """Something the user can do about a refused start."""

    kind: Literal["letRead", "share", "sandboxOff"]
    """``letRead``: let its sandbox read :attr:`path` without sharing it (a package folder; never a root);
    ``share``: share the workspace folder :attr:`path` with it; ``sandboxOff``: restart it without its sandbox, for
    this session."""
    title: str
    """The button's words: ``Let it read <folder>``, ``Share <folder>``, or :data:`SANDBOX_OFF`."""
    path: str | None = None
    """The folder the action is about (absent for ``sandboxOff``)."""


class StartDiagnosis(WireModel):
    """A sandboxed server failed during start-up: that the sandbox may be the cause, what it refused, what to do."""

    sentence: str
    """One sentence for status, the notification and the terminal."""
    refused: tuple[str, ...] = ()
    """The paths it was refused (existing, outside its policy), where they can be known."""
    actions: tuple[SandboxAction, ...] = ()
    """What the user can do, in the order offered."""


def diagnose_start(
    lines: Iterable[str],
    args: Sequence[str],
    policy: SandboxPolicy,
    *,
    how: str,
    workspace_folders: Sequence[str],
    home: str,
) -> StartDiagnosis | None:
    """The diagnosis of a start that failed (``how``: "exited with status 1" …) under ``policy``; ``None`` when no
    sandbox was enforced. ``lines`` are its stderr lines of this start, ``args`` its command line."""
    if not policy.enforced:
        return None
    home_path = Path(home)
    named = [path for path, _ in claimed_paths(lines)]
    named += [arg for arg in args if os.path.isabs(arg)]
    refused: list[str] = []
    for path in dict.fromkeys(os.path.normpath(p) for p in named):
        if outside(path, policy, home_path) and len(refused) < MAX_PATHS:
            refused.append(path)
    actions: list[SandboxAction] = []
    for path in refused:
        folder = _holding(path, workspace_folders)
        if folder is not None:
            action = SandboxAction(kind="share", title=f"Share {folder}", path=folder)
        else:
            package = package_folder(path, home_path)
            if package is None:
                continue
            action = SandboxAction(kind="letRead", title=f"Let it read {package}", path=package)
        if action not in actions:
            actions.append(action)
    actions.append(SandboxAction(kind="sandboxOff", title=SANDBOX_OFF))
    mechanism = "Landlock" if policy.mechanism == "landlock" else policy.mechanism
    if refused:
        found = f"it was refused {listing(refused)}"
    else:
        found = "its messages name no path it was refused, so turning the sandbox off is the way to find out"
    sentence = f"It {how} during start-up while its sandbox ({mechanism}) confined it, which may be the cause: {found}."
    return StartDiagnosis(sentence=sentence, refused=tuple(refused), actions=tuple(actions))


def package_folder(path: str, home: Path) -> str | None:
    """The folder to offer for reading ``path``: the outermost ``node_modules`` it is in, the virtual environment or
    ``site-packages`` it is in, else the folder itself or the one holding the file; ``None`` when that would be
    home or above it."""
    target = Path(path)
    candidates: list[Path] = []
    modules = outermost_node_modules(target if not target.is_dir() else target / "x")
    if modules is not None:
        candidates.append(modules)
    for folder in target.parents:
        if is_home_or_above(folder, home):
            break
        if folder.name in ("site-packages", "dist-packages") or (folder / "pyvenv.cfg").is_file():
            candidates.append(folder)
            break
    candidates.append(target if target.is_dir() else target.parent)
    for candidate in candidates:
        if not is_home_or_above(candidate, home) and candidate != Path(candidate.anchor):
            return str(candidate)
    return None


def _holding(path: str, folders: Sequence[str]) -> str | None:
    """The innermost of ``folders`` that holds ``path``."""
    holding = [folder for folder in folders if within(path, folder)]
    return max(holding, key=len) if holding else None
