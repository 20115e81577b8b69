"""One start of a stdio server: consent made binding through its command line and an OS sandbox.

Roots are advice: a server may never ask for them. So a server's consented folders also reach it in two binding
ways, decided here for each start:

- ``${hostBridge:sharedFolders}`` in its ``args``, ``env`` or ``cwd`` is replaced by the folders shared with it now:
  an argument that is exactly the variable becomes one argument per folder (canonical paths, sorted); inside a longer
  string it becomes the paths joined with the OS path separator; as ``cwd`` it is the first folder (none shared: the
  server's usual working directory). The consent fingerprint is taken over the config with the variable unexpanded.
- the server runs in an OS sandbox (:mod:`host_bridge.sandbox`) whose file access outside system and runtime paths is
  exactly those folders, unless its config or the user's default says ``"sandbox": "off"`` (or the OS cannot).

Either way the start depends on the shared set, so a server is restarted when it changes (a Landlock ruleset cannot
widen, and a process keeps what it was given).
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from host_bridge.hub.config import SHARED_FOLDERS, ServerConfig
from host_bridge.hub.models import SandboxState
from host_bridge.procs import die_with_parent
from host_bridge.sandbox.apply import sandboxed_launch
from host_bridge.sandbox.policy import SandboxPolicy, make_private_tmp, policy_for_launch
from host_bridge.sandbox.runners import runner_folder
from host_bridge.sandbox.support import mechanism_for, supported

SandboxSetting = Literal["enforce", "off"]
"""A server's sandbox setting: ``enforce`` (where the OS supports it) or ``off``."""
NetworkSetting = Literal["on", "off"]
"""A server's network setting: ``on``, or ``off`` (the kernel refuses it TCP and, with seccomp, other protocols)."""


def network_allowed(config: ServerConfig, default: NetworkSetting) -> bool:
    """Whether ``config``'s server gets the network: its own setting over the user's ``default``, except that a
    workspace file can only turn it off, never on where the user's default is off."""
    if config.workspace_defined:
        return config.network != "off" and default != "off"
    return (config.network or default) == "on"


def unix_sockets_allowed(config: ServerConfig) -> bool:
    """Whether ``config``'s server may reach other programs' UNIX sockets: only when the user's own settings say
    ``"unixSockets": "allow"`` (a workspace file cannot)."""
    return config.unix_sockets == "allow" and not config.workspace_defined


def expand_shared_folders(
    args: Sequence[str], env: Mapping[str, str], cwd: str | None, folders: Sequence[str]
) -> tuple[list[str], dict[str, str], str | None]:
    """``args``, ``env`` and ``cwd`` with ``${hostBridge:sharedFolders}`` replaced by ``folders`` (see the module).

    A folder whose name holds the path separator (``evil:/etc``) is left out of the joined form, where it would
    read as two folders (:func:`unjoinable` says which, in a sentence); it is passed as its own argument."""
    joined = os.pathsep.join(folder for folder in folders if os.pathsep not in folder)
    expanded: list[str] = []
    for arg in args:
        if arg == SHARED_FOLDERS:
            expanded.extend(folders)
        else:
            expanded.append(arg.replace(SHARED_FOLDERS, joined))
    environment = {name: value.replace(SHARED_FOLDERS, joined) for name, value in env.items()}
    if cwd == SHARED_FOLDERS:
        cwd = folders[0] if folders else None
    elif cwd is not None:
        cwd = cwd.replace(SHARED_FOLDERS, joined)
    return expanded, environment, cwd


def unjoinable(config: ServerConfig, folders: Sequence[str]) -> str | None:
    """The sentence saying which shared folders are left out of the joined form of ``${hostBridge:sharedFolders}``
    (their names hold the path separator), or ``None`` when the entry uses no joined form or no folder is left out."""
    joined_use = [arg for arg in config.args if SHARED_FOLDERS in arg and arg != SHARED_FOLDERS]
    joined_use += [value for value in config.env.values() if SHARED_FOLDERS in value]
    if config.cwd is not None and SHARED_FOLDERS in config.cwd and config.cwd != SHARED_FOLDERS:
        joined_use.append(config.cwd)
    left_out = [folder for folder in folders if os.pathsep in folder]
    if not joined_use or not left_out:
        return None
    names = ", ".join(repr(folder) for folder in left_out)
    return (
        f"{names} {'is' if len(left_out) == 1 else 'are'} left out of the {os.pathsep!r}-joined list of shared "
        f"folders its entry passes: the name holds {os.pathsep!r}, so it would read as two folders. Rename the "
        "folder, or pass ${hostBridge:sharedFolders} as an argument of its own (one folder per argument)."
    )


@dataclass
class Launch:
    """Everything one start of a stdio server needs, and what it was decided from."""

    command: str
    """What to execute (wrapped by ``sandbox-exec`` on macOS)."""
    args: list[str]
    """Its arguments, shared folders expanded."""
    env: dict[str, str]
    """Its whole environment (the sidecar's, the config's over it, the sandbox's temp folder)."""
    cwd: str | None
    """Its working directory."""
    folders: tuple[str, ...]
    """The shared folders it was started with (canonical, sorted), read-only ones included."""
    policy: SandboxPolicy | None
    """The sandbox it runs in; ``policy.enforced`` says whether it is enforced (the setting, the OS)."""
    read_only: tuple[str, ...] = ()
    """Those of :attr:`folders` shared read only (sorted)."""
    allowed_read: tuple[str, ...] = ()
    """Paths the user let it read after a refusal (sorted); part of its sandbox."""
    preexec_fn: Callable[[], None] | None = None
    """Runs in the forked child before ``exec`` (POSIX): the sandbox, then the parent-death signal."""
    private_tmp: Path | None = field(default=None)
    """Its own temporary folder, removed by :meth:`clean_up`."""
    mount_layer: bool = False
    """It starts in a mount namespace (a private ``/dev``, planted files read only)."""

    def clean_up(self) -> None:
        """Remove the private temporary folder once the server is gone."""
        if self.private_tmp is not None:
            shutil.rmtree(self.private_tmp, ignore_errors=True)


def plan_launch(
    config: ServerConfig,
    folders: Sequence[str],
    *,
    sandbox_default: SandboxSetting,
    sandbox_override: SandboxSetting | None = None,
    home: str | None = None,
    allowed_read: Sequence[str] = (),
    workspace_folders: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    runtime_limit: Sequence[str] | None = None,
    read_only: Sequence[str] = (),
    network_default: NetworkSetting = "on",
) -> Launch:
    """The start of the stdio server ``config`` with ``folders`` shared with it now (those also in ``read_only``
    read only).

    ``workspace_folders`` (the candidate folders) are used to warn when its runtime grants would expose one of them,
    and bound where its package roots are looked for. ``runtime_limit`` are the runtime paths of its first start
    (:meth:`SandboxPolicy.runtime_paths`): a later start gets no runtime path beyond them without the user.
    ``network_default`` is the user's network setting (see :func:`network_allowed`).
    """
    assert config.command is not None
    shared = tuple(sorted(folders))
    read_only_shared = tuple(folder for folder in shared if folder in set(read_only))
    user_env = os.environ if environ is None else environ
    base_env = {**user_env, **config.env}
    args, env, cwd = expand_shared_folders(config.args, base_env, config.cwd, shared)
    setting = sandbox_override or config.sandbox or sandbox_default
    home_dir = home if home is not None else os.path.expanduser("~")
    private_tmp = make_private_tmp(config.id) if setting == "enforce" else None
    policy = policy_for_launch(
        config.executable or config.command,
        args,
        cwd=cwd,
        env=env,
        shared_folders=[folder for folder in shared if folder not in read_only_shared],
        read_only_folders=read_only_shared,
        network=network_allowed(config, network_default),
        unix_sockets=unix_sockets_allowed(config),
        home=home_dir,
        private_tmp=private_tmp,
        enforce=setting == "enforce",
        allowed_read=allowed_read,
        workspace_folders=workspace_folders,
        runner_home=runner_folder(config.id, config.identity.key, home_dir, user_env),
        entry_env=config.env,
        user_env=user_env,
        runtime_limit=runtime_limit,
    )
    left_out = unjoinable(config, shared)
    if left_out is not None:
        policy = policy.model_copy(update={"warnings": (*policy.warnings, left_out)})
    sandboxed = sandboxed_launch(policy, config.command, args, env, then=die_with_parent)
    return Launch(
        command=sandboxed.command,
        args=list(sandboxed.args),
        env=dict(sandboxed.env),
        cwd=cwd,
        folders=shared,
        read_only=read_only_shared,
        policy=policy,
        allowed_read=tuple(sorted(allowed_read)),
        preexec_fn=sandboxed.preexec_fn,
        private_tmp=private_tmp,
        mount_layer=sandboxed.mount_layer is not None,
    )


def depends_on_folders(config: ServerConfig, launch: Launch | None) -> bool:
    """Whether a change of the shared folders needs a restart: they are on its command line or fence its sandbox."""
    return config.uses_shared_folders or (launch is not None and launch.policy is not None and launch.policy.enforced)


PLANNED_OFF = "The sandbox is off for this server: it will be able to read and write every file your account can."
"""What a server whose sandbox setting is off will get, before it starts."""


@functools.cache
def _machine_sandbox() -> tuple[bool, str]:
    """Whether this machine can sandbox stdio servers, and the sentence saying with what or why not (probed once)."""
    return supported()


def planned_sandbox(setting: SandboxSetting) -> SandboxState:
    """The sandbox a stdio server that has not started yet will get on this machine (``planned``)."""
    if setting == "off":
        return SandboxState(setting=setting, enforced=False, planned=True, mechanism="none", summary=PLANNED_OFF)
    enforced, sentence = _machine_sandbox()
    return SandboxState(
        setting=setting,
        enforced=enforced,
        planned=True,
        mechanism=mechanism_for() if enforced else "none",
        summary=sentence,
    )
