"""A policy's paths as Landlock rules (standard library only, shared by the ``preexec_fn`` and the runner)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from host_bridge.sandbox.landlock import READ_EXECUTE, READ_WRITE, LandlockError, Rule, restrict


@dataclass(frozen=True)
class Plan:
    """What to do in the child before ``exec``: folders to create, then the rules to restrict to."""

    rules: tuple[Rule, ...]
    create: tuple[str, ...]
    abi: int | None

    def apply(self) -> list[str]:
        """Create the folders (0700, parents included) and confine the calling thread; the paths skipped."""
        for folder in self.create:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        return restrict(self.rules, self.abi)


def describe_failure(error: OSError) -> str:
    """What went wrong while applying a plan, naming the path and the errno (a :class:`LandlockError` already does)."""
    if isinstance(error, LandlockError):
        return str(error.strerror)
    name = errno.errorcode.get(error.errno or 0, f"errno {error.errno}")
    where = f" on {error.filename!r}" if error.filename is not None else ""
    return f"preparing the sandbox failed{where}: {name} ({error.strerror})"


def landlock_rules(read_execute: Iterable[str], read_write: Iterable[str]) -> tuple[Rule, ...]:
    """Read-write rules first, then read-and-execute ones."""
    return (
        *(Rule(path, READ_WRITE) for path in read_write),
        *(Rule(path, READ_EXECUTE) for path in read_execute),
    )


def plan_from_wire(policy: Mapping[str, Any]) -> Plan | None:
    """The plan for a policy in wire form (``SandboxPolicy.to_json``), or ``None`` when it is not enforced.

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
    return Plan(landlock_rules(read_execute, read_write), tuple(create), abi)


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
