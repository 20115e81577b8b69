"""Starting a server under its policy: a ``preexec_fn`` that confines the forked child before ``exec`` (Linux),
the same thing as a wrapper command (``python -m host_bridge.sandbox.run``, or ``sandbox-exec`` on macOS), and
:func:`sandboxed_launch`, which picks what this platform needs.

No extra process stays between host_bridge and the server: the ``preexec_fn`` runs in the child that becomes the
server, and the wrappers ``exec`` the server in their own place. The one exception is the mount layer
(:mod:`host_bridge.sandbox.mounts`): bubblewrap waits for the server as its parent, in the same process group.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import mmap
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from host_bridge.sandbox import mounts, seccomp
from host_bridge.sandbox.landlock import RESOLVE_UNIX_ABI, Rule, landlock_abi
from host_bridge.sandbox.macos import wrap_command as wrap_for_macos
from host_bridge.sandbox.mounts import MountLayer
from host_bridge.sandbox.policy import SandboxPolicy
from host_bridge.sandbox.rules import Plan, describe_failure, landlock_rules
from host_bridge.system import IS_WINDOWS

logger = logging.getLogger(__name__)

_FAILURE_BYTES = 4096


class SandboxStartError(RuntimeError):
    """The server was not started because its sandbox could not be applied; the message says why and what to do."""


class SandboxPreexec:
    """A ``preexec_fn`` that applies a Landlock policy in the forked child, then runs ``then``.

    The paths are opened (``O_PATH``) and the ruleset built in the child, so a folder created or replaced between
    the policy's computation and the start is what gets the rule. A path that does not exist is skipped. Any other
    failure aborts the start: the child writes the reason to its stderr and to memory shared with the parent, and
    raises, so ``subprocess`` raises ``SubprocessError`` in the parent; :meth:`failure` then gives the reason as a
    :class:`SandboxStartError`. The server never runs unconfined when its policy is enforced. Use one per start.
    """

    def __init__(self, policy: SandboxPolicy, then: Callable[[], None] | None = None) -> None:
        if not policy.enforced or policy.mechanism != "landlock":
            raise ValueError(f"SandboxPreexec applies enforced Landlock policies; this one is {policy.mechanism!r}")
        self._plan = plan_for(policy)
        self._then = then
        # Anonymous shared memory survives fork, so the child can tell the parent why it failed.
        self._shared = mmap.mmap(-1, _FAILURE_BYTES)

    def __call__(self) -> None:
        try:
            self._plan.apply()
        except OSError as error:
            message = (
                f"host_bridge sandbox: {describe_failure(error)}; the server was not started "
                '(set its sandbox to "off" to start it without one)'
            )
            data = message.encode("utf-8", "replace")[: _FAILURE_BYTES - 4]
            self._shared[:4] = len(data).to_bytes(4, "little")
            self._shared[4 : 4 + len(data)] = data
            with contextlib.suppress(OSError):
                os.write(2, data + b"\n")
            raise
        if self._then is not None:
            self._then()

    def failure(self) -> SandboxStartError | None:
        """In the parent, after a start failed: the sandbox's reason as an exception, or ``None`` if it was not
        the sandbox that failed."""
        size = int.from_bytes(self._shared[:4], "little")
        if not size:
            return None
        message = self._shared[4 : 4 + size].decode("utf-8", "replace")
        self._shared[:4] = b"\0\0\0\0"
        return SandboxStartError(message)


def plan_for(policy: SandboxPolicy, extra: Sequence[Rule] = ()) -> Plan:
    """What the child does for an enforced Landlock ``policy``: its rules (and ``extra`` ones), the folders to
    create, and the seccomp program for its socket settings (``None`` when none is needed or none can be built)."""
    rules = landlock_rules((g.path for g in policy.read_execute), (g.path for g in policy.read_write), extra)
    create = tuple(g.path for g in policy.read_write if g.create)
    return Plan(rules, create, policy.abi, policy.network, policy.unix_sockets, seccomp_program(policy))


def seccomp_program(policy: SandboxPolicy) -> bytes | None:
    """The seccomp program ``policy`` needs on this kernel: UNIX sockets refused where Landlock cannot (before
    ABI 9), everything but TCP refused when its network is off; ``None`` when nothing is needed or it cannot be
    built here (:func:`host_bridge.sandbox.confinement.channels` says so in status)."""
    abi = policy.abi if policy.abi is not None else landlock_abi()
    refuse_unix = not policy.unix_sockets and abi < RESOLVE_UNIX_ABI
    if seccomp.unavailable_reason() is not None:
        return None
    return seccomp.program(refuse_unix=refuse_unix, network=policy.network)


def writable_folders(policy: SandboxPolicy) -> list[str]:
    """The consented folders ``policy`` lets the server write (where planted files are guarded)."""
    return [grant.path for grant in policy.read_write if grant.kind == "shared"]


def sandbox_preexec(policy: SandboxPolicy, *, then: Callable[[], None] | None = None) -> Callable[[], None]:
    """The ``preexec_fn`` that starts a server under ``policy`` (a :class:`SandboxPreexec` when it is enforced with
    Landlock), then runs ``then`` (e.g. :func:`host_bridge.procs.die_with_parent`).

    A policy that is not enforced gives ``then`` itself (or a no-op). Raises ``ValueError`` for an enforced policy
    that a ``preexec_fn`` cannot apply (macOS: wrap the command instead, see :func:`sandboxed_launch`).
    """
    if not policy.enforced:
        return then if then is not None else _nothing
    return SandboxPreexec(policy, then)


def runner_command(
    policy: SandboxPolicy, command: str, args: Sequence[str], extra: Sequence[Rule] = ()
) -> tuple[str, list[str]]:
    """``command`` and ``args`` wrapped in the runner (``python -m host_bridge.sandbox.run POLICY -- command args``, as
    :data:`_RUNNER` starts it), for hosts
    that cannot pass a ``preexec_fn`` (and inside the mount layer). The runner applies the policy (with ``extra``
    rules and the seccomp program) and then ``exec``s the command in its place."""
    wire = json.loads(policy.to_json())
    program = seccomp_program(policy) if policy.enforced else None
    if program is not None:
        wire["seccomp"] = base64.b64encode(program).decode("ascii")
    if extra:
        wire["extraRules"] = [{"path": rule.path, "access": rule.access} for rule in extra]
    text = json.dumps(wire, separators=(",", ":"))
    return sys.executable, ["-I", "-S", "-c", _RUNNER, text, "--", command, *args]


_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
_RUNNER = (
    f"import sys; sys.path[:0] = [{_PACKAGE_PARENT!r}]; "
    "from host_bridge.sandbox.run import main; sys.exit(main(sys.argv[1:]))"
)
"""``python -m host_bridge.sandbox.run`` for any interpreter layout: isolated and without site-packages (faster, and
the same whether host_bridge is installed, editable or laid out in an editor package), with host_bridge's own folder
first on ``sys.path`` (the runner needs the standard library only)."""


@dataclass(frozen=True)
class SandboxedLaunch:
    """How to start one server under its policy: pass these to ``subprocess``/``anyio`` as they are."""

    command: str
    """The program to start (the server's, or a wrapper that ``exec``s it)."""
    args: list[str]
    """Its arguments."""
    env: dict[str, str]
    """The server's environment with ``TMPDIR``/``TMP``/``TEMP`` pointing at its private temp folder."""
    preexec_fn: Callable[[], None] | None
    """What to run in the child before ``exec`` (POSIX only; ``None`` on Windows)."""
    mount_layer: MountLayer | None = None
    """The mount namespace it starts in (Linux, where bubblewrap works), or ``None``."""

    def failure(self) -> SandboxStartError | None:
        """After ``subprocess`` raised while starting: the sandbox's reason, or ``None`` if it was something else."""
        return self.preexec_fn.failure() if isinstance(self.preexec_fn, SandboxPreexec) else None


def sandboxed_launch(
    policy: SandboxPolicy,
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    then: Callable[[], None] | None = None,
    use_runner: bool = False,
    mount_layer: bool | None = None,
) -> SandboxedLaunch:
    """What to start for ``command args`` under ``policy``, on this platform.

    Linux: in the mount layer where bubblewrap works and a planted file exists to guard (``mount_layer`` ``None``;
    ``True``: wherever bubblewrap works; ``False``: never), with the runner applying Landlock inside it (it costs
    an interpreter start, so it is not used when it guards nothing); otherwise the command as it is, with a
    ``preexec_fn`` that applies Landlock (or, with ``use_runner``, wrapped in the runner). macOS: wrapped in
    ``sandbox-exec`` with the policy's profile. Not enforced (Windows, the ``off`` setting, no Landlock): the command
    as it is. ``then`` runs in the child last (POSIX).
    """
    environment = policy.environment(env)
    if IS_WINDOWS:
        return SandboxedLaunch(command, list(args), environment, None)
    if policy.enforced and policy.mechanism == "sandbox-exec":
        wrapped, wrapped_args = wrap_for_macos(policy, command, args)
        return SandboxedLaunch(wrapped, wrapped_args, environment, then)
    if policy.enforced and mount_layer is not False:
        layer = mounts.layer_for(writable_folders(policy))
        if layer is not None and (layer.protected or mount_layer):
            wrapped, wrapped_args = runner_command(policy, command, args, mounts.PRIVATE_DEVICES)
            bwrap, *options = layer.command()
            return SandboxedLaunch(bwrap, [*options, wrapped, *wrapped_args], environment, then, layer)
        if mount_layer:
            raise SandboxStartError(f"no mount layer here: {mounts.unavailable_reason()}")
    if policy.enforced and use_runner:
        wrapped, wrapped_args = runner_command(policy, command, args)
        return SandboxedLaunch(wrapped, wrapped_args, environment, then)
    return SandboxedLaunch(command, list(args), environment, sandbox_preexec(policy, then=then))


def _nothing() -> None:
    return None
