"""Package runners (``npx``, ``pnpm dlx``, ``yarn dlx``, ``bunx``, ``uvx`` / ``uv tool run``, ``pipx run``): a private
cache and tool folder for each server they start.

A runner downloads and installs the server when it starts, so it must write somewhere. Never into the user's own
caches and tool folders (``~/.npm/_npx``, uv's tools, pipx's venvs): what a confined server writes there, the user
later runs unconfined (``npx some-tool``, ``ruff`` installed with ``uv tool``). Each such server gets its own folder
instead (kept between its starts, so only its first start downloads), and the runner is pointed at it with its own
environment variables, which replace any value the server's entry sets (a repository could otherwise name
``~/.ssh`` as a cache, and the grant would follow it). Nothing here is computed from the entry's ``env``.

The user's runner configuration that holds credentials (``~/.npmrc``) is withheld, with a warning; Pythons that uv
installed are readable, never writable.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from host_bridge.sandbox.grants import PathGrant, canonical


@dataclass(frozen=True)
class Runner:
    """A package runner: the names that mean it, and the variables that move its caches and tool folders."""

    name: str
    """What status calls it."""
    launchers: tuple[str, ...]
    """Executable names (as started, resolved, or as a script's interpreter) that mean this runner."""
    folders: tuple[tuple[str, str], ...]
    """``(variable, subfolder)``: each variable is set to that subfolder of the server's private folder."""
    readable: tuple[str, ...] = ()
    """The user's own folders (relative to home) it may read, never write: its configuration, installed Pythons."""
    withheld: tuple[str, ...] = ()
    """Configuration (relative to home) it would read but is not given, because it holds credentials."""


_XDG = (("XDG_CACHE_HOME", "xdg-cache"), ("XDG_DATA_HOME", "xdg-data"), ("XDG_STATE_HOME", "xdg-state"))
_NPM = (("npm_config_cache", "npm"),)

RUNNERS = (
    Runner("npm", ("npx", "npm", "npx-cli.js", "npm-cli.js"), _NPM, withheld=(".npmrc",)),
    Runner(
        "pnpm",
        ("pnpm", "pnpx", "pnpm.cjs", "pnpx.cjs", "pnpm.js"),
        (*_NPM, ("npm_config_store_dir", "pnpm-store"), *_XDG),
        withheld=(".npmrc",),
    ),
    Runner(
        "yarn",
        ("yarn", "yarnpkg", "yarn.js", "yarn.cjs"),
        (*_NPM, ("YARN_CACHE_FOLDER", "yarn-cache"), ("YARN_GLOBAL_FOLDER", "yarn-global"), *_XDG),
        withheld=(".npmrc", ".yarnrc", ".yarnrc.yml"),
    ),
    Runner("bun", ("bunx",), (("BUN_INSTALL_CACHE_DIR", "bun-cache"), ("BUN_INSTALL_GLOBAL_DIR", "bun-global"))),
    Runner(
        "uv",
        ("uv", "uvx"),
        (("UV_CACHE_DIR", "uv-cache"), ("UV_TOOL_DIR", "uv-tools"), ("UV_TOOL_BIN_DIR", "uv-bin")),
        readable=(".config/uv", ".local/share/uv/python"),
    ),
    Runner(
        "pipx",
        ("pipx",),
        (
            ("PIPX_HOME", "pipx"),
            ("PIPX_BIN_DIR", "pipx-bin"),
            ("PIPX_MAN_DIR", "pipx-man"),
            ("PIP_CACHE_DIR", "pip-cache"),
            *_XDG,
        ),
    ),
)
"""Every runner host_bridge knows, and how each is moved to a private folder."""

RUNNER_VARIABLES = frozenset(variable for runner in RUNNERS for variable, _ in runner.folders) | frozenset(
    {"PIPX_SHARED_LIBS", "UV_PYTHON_INSTALL_DIR", "npm_config_userconfig", "NPM_CONFIG_CACHE"}
)
"""Variables that move a runner's folders: an entry's value for them is never used for a grant."""


@dataclass
class RunnerPlan:
    """What a runner-started server gets: its folders (read-write, made when missing), variables, and reads."""

    runners: tuple[str, ...] = ()
    """The runners found (``"npm"``, ``"uv"`` …)."""
    writable: list[PathGrant] = field(default_factory=list[PathGrant])
    """Its private folders."""
    readable: list[PathGrant] = field(default_factory=list[PathGrant])
    """The user's runner configuration and installed Pythons, read-only."""
    environment: dict[str, str] = field(default_factory=dict[str, str])
    """The variables that point the runner at its private folders."""
    warnings: list[str] = field(default_factory=list[str])
    """What the user should know (withheld credentials, an entry's cache variable replaced)."""


def runners_for(names: Iterable[str]) -> tuple[Runner, ...]:
    """The runners among the executable ``names`` of a launch."""
    found = set(names)
    return tuple(runner for runner in RUNNERS if found.intersection(runner.launchers))


def plan_runners(
    runners: Iterable[Runner], private: Path | None, home: Path, entry_env: Mapping[str, str]
) -> RunnerPlan:
    """The private folders under ``private`` (the server's own, kept between starts) for ``runners``.

    ``entry_env`` is what the server's entry sets: a runner variable there is replaced (and the user told), never
    followed. Without ``private`` the runners get no folder to write (they fail, and say where).
    """
    chosen = tuple(runners)
    plan = RunnerPlan(runners=tuple(r.name for r in chosen))
    for runner in chosen:
        for variable, sub in runner.folders:
            if private is None:
                continue
            folder = private / sub
            plan.environment[variable] = str(folder)
            why = f"{runner.name}'s private cache and tool folder for this server"
            plan.writable.append(PathGrant(path=str(canonical(private) / sub), kind="cache", why=why, create=True))
        for relative in runner.readable:
            if (home / relative).exists():
                why = f"{runner.name}'s settings and installed Pythons (read only)"
                plan.readable.append(PathGrant(path=str(canonical(home / relative)), kind="cache", why=why))
        for relative in runner.withheld:
            if (home / relative).exists():
                plan.warnings.append(
                    f"{home / relative} is not readable in the sandbox because it can hold registry tokens; "
                    f"{runner.name} uses its defaults and npm_config_* variables instead. Allow it read-only for "
                    "this server if it needs a private registry or proxy from there."
                )
    for variable in sorted(set(entry_env).intersection(plan.environment)):
        plan.warnings.append(
            f"Its entry sets {variable}={entry_env[variable]}; the sandbox gives it a private folder instead "
            f"({plan.environment[variable]}), so that nothing it installs is run later outside the sandbox."
        )
    return plan


def runner_folder(server_id: str, identity_key: str, home: str | Path, user_env: Mapping[str, str]) -> Path:
    """The private runner folder of one server identity, kept between its starts (made only when a runner needs it):
    ``$XDG_CACHE_HOME/host-bridge/runners/<id>-<hash>``. A new launch configuration is a new identity, and a new
    folder, so nothing one configuration installed runs under another."""
    cache_home = Path(user_env.get("XDG_CACHE_HOME") or Path(home) / ".cache")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", server_id)[:40] or "server"
    digest = hashlib.sha256(identity_key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return cache_home / "host-bridge" / "runners" / f"{safe}-{digest}"
