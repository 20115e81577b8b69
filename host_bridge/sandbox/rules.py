"""A policy as what the child does before ``exec`` (standard library only, shared by the ``preexec_fn`` and the
runner): drop capabilities, apply Landlock (files, TCP, scopes), install the seccomp program."""

from __future__ import annotations

import base64
import binascii
import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from host_bridge.sandbox import bpf, capabilities
from host_bridge.sandbox.landlock import (
    READ_EXECUTE,
    READ_WRITE,
    LandlockError,
    Rule,
    attributes_for,
    landlock_abi,
    restrict,
)


@dataclass(frozen=True)
class Plan:
    """What to do in the child before ``exec``: folders to create, then capabilities, Landlock and seccomp."""

    rules: tuple[Rule, ...]
    create: tuple[str, ...]
    abi: int | None
    network: bool = True
    """TCP (and, with the seccomp program, every other protocol) allowed."""
    unix_sockets: bool = False
    """Connections to other programs' UNIX sockets allowed (no pathname rule on ABI 9, no abstract scope)."""
    seccomp: bytes | None = None
    """The seccomp program to install last (built in the parent by :mod:`host_bridge.sandbox.seccomp`)."""

    def apply(self) -> list[str]:
        """Create the folders (0700, parents included), drop capabilities, confine the calling thread with Landlock,
        then install the seccomp program; the paths skipped."""
        for folder in self.create:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        capabilities.drop(network=self.network)
        abi = landlock_abi() if self.abi is None else self.abi
        attributes = attributes_for(abi, network=self.network, unix_sockets=self.unix_sockets)
        skipped = restrict(self.rules, abi, attributes)
        if self.seccomp is not None:
            bpf.load(self.seccomp)
        return skipped


def describe_failure(error: OSError) -> str:
    """What went wrong while applying a plan, naming the path and the errno (a :class:`LandlockError` already does)."""
    if isinstance(error, LandlockError):
        return str(error.strerror)
    name = errno.errorcode.get(error.errno or 0, f"errno {error.errno}")
    where = f" on {error.filename!r}" if error.filename is not None else ""
    return f"preparing the sandbox failed{where}: {name} ({error.strerror})"


def landlock_rules(
    read_execute: Iterable[str], read_write: Iterable[str], extra: Iterable[Rule] = ()
) -> tuple[Rule, ...]:
    """Read-write rules first, then read-and-execute ones, then ``extra`` (devices of a private ``/dev``)."""
    return (
        *(Rule(path, READ_WRITE) for path in read_write),
        *(Rule(path, READ_EXECUTE) for path in read_execute),
        *extra,
    )


def plan_from_wire(policy: Mapping[str, Any]) -> Plan | None:
    """The plan for a policy in wire form (``SandboxPolicy.to_json``, with the runner's ``seccomp`` program in
    base64 and its ``extraRules``), or ``None`` when it is not enforced.

    Raises ``ValueError`` naming what is wrong when the mapping is not such a policy.
    """
    if not isinstance(policy.get("enforced"), bool):
        raise ValueError("the policy has no boolean 'enforced'")
    if not policy["enforced"]:
        return None
    if policy.get("mechanism") != "landlock":
        raise ValueError(f"the policy is for {policy.get('mechanism')!r}, not Landlock")
    read_execute = _paths(policy, "readExecute")
    read_write = _paths(policy, "readWrite")
    create = [str(grant["path"]) for grant in policy.get("readWrite", []) if grant.get("create") is True]
    abi = policy.get("abi")
    if abi is not None and not isinstance(abi, int):
        raise ValueError("the policy's 'abi' is not a number")
    network, unix_sockets = policy.get("network", True), policy.get("unixSockets", False)
    if not isinstance(network, bool) or not isinstance(unix_sockets, bool):
        raise ValueError("the policy's 'network' and 'unixSockets' must be true or false")
    program: bytes | None = None
    if policy.get("seccomp") is not None:
        try:
            program = base64.b64decode(str(policy["seccomp"]), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the policy's 'seccomp' is not base64") from None
    extra = [_extra_rule(item) for item in cast(list[object], policy.get("extraRules", []))]
    return Plan(landlock_rules(read_execute, read_write, extra), tuple(create), abi, network, unix_sockets, program)


def _extra_rule(item: object) -> Rule:
    if isinstance(item, dict):
        fields = cast(dict[str, object], item)
        path, access = fields.get("path"), fields.get("access")
        if isinstance(path, str) and os.path.isabs(path) and isinstance(access, int):
            return Rule(path, access)
    raise ValueError(f"an entry of the policy's 'extraRules' is not {{path, access}}: {item!r}")


def _paths(policy: Mapping[str, Any], key: str) -> list[str]:
    grants: object = policy.get(key, [])
    if not isinstance(grants, list):
        raise ValueError(f"the policy's {key!r} is not a list")
    paths: list[str] = []
    for grant in cast(list[object], grants):
        path = cast(dict[str, object], grant).get("path") if isinstance(grant, dict) else None
        if not isinstance(path, str) or not os.path.isabs(path):
            raise ValueError(f"an entry of the policy's {key!r} has no absolute 'path': {grant!r}")
        paths.append(path)
    return paths
