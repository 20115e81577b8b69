"""The sandbox policy of one stdio server launch: which paths it may read and execute, and which it may write.

:func:`policy_for_launch` computes it from what is about to run and from the user's consent. Outside system and
runtime paths, which are read-only, a server's file access is exactly its consented folders and a private temp
folder; everything else, the rest of the user's home included, is refused. The same policy drives Landlock on Linux
(:mod:`host_bridge.sandbox.apply`), a ``sandbox-exec`` profile on macOS (:mod:`host_bridge.sandbox.macos`), and
the sentence status shows where nothing is enforced (Windows).

Why each default path is there (Linux):

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
  install prefix through the runtime rule below.
* Devices, read and write: ``/dev/null``, ``zero``, ``full``, ``random`` and ``urandom``. Not the terminals
  (``/dev/tty``, ``/dev/pts``, ``/dev/ptmx``): a server talks over pipes, and another terminal of the user's is
  somewhere to type commands into. Not ``/dev/shm`` either: it is shared by every program of the user. Where a
  mount namespace is available (:mod:`host_bridge.sandbox.mounts`) the server gets a private ``/dev`` instead, whose
  terminals and ``shm`` are its own, and those are granted.

The runtime rule grants, read-only: the resolved executable's install prefix (``/usr/local/bin/node`` →
``/usr/local``), a virtual environment and its base interpreter's prefix (``pyvenv.cfg``), the interpreter named by
a script's ``#!`` line, the root of a version manager whose shims start it (``~/.pyenv`` …), and the package root of
the program file it is started with. Package managers that install on the fly get their own cache, read-write
(see :data:`LAUNCHER_CACHES`). No runtime grant is ever the home folder, an ancestor of it, or ``/``.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from host_bridge.sandbox.landlock import landlock_abi
from host_bridge.sandbox.support import WINDOWS_SENTENCE, Mechanism, mechanism_for, supported
from host_bridge.wire import WireModel

GrantKind = Literal["system", "device", "runtime", "package", "cache", "hostBridge", "tmp", "shared", "allowed"]
"""Why a path is in a policy: system paths, device nodes, the server's runtime, the package of its program file,
a package manager's cache, host_bridge's own interpreter, the private temp folder, a consented folder, or a path the
user allowed read-only after a refusal."""


class PathGrant(WireModel):
    """One path the sandbox lets a server use (and everything beneath it, for a directory)."""

    path: str
    """Canonical absolute path."""
    kind: GrantKind
    """Why it is granted."""
    why: str
    """The reason in words, e.g. ``"node's install prefix"``."""
    create: bool = False
    """Created (mode 0700, with its parents) before the sandbox is applied when missing: a package manager's cache
    that must be writable even on its first use, when its parent (the home folder) is not."""


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
    temp folder, device nodes and package caches."""
    private_tmp: str | None = None
    """The server's own temp folder; ``TMPDIR``, ``TMP`` and ``TEMP`` point at it (:meth:`environment`)."""
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
        """``env`` with the temp-folder variables pointing at :attr:`private_tmp` (unchanged without one), and, when
        enforced without :attr:`unix_sockets`, without :data:`SOCKET_VARIABLES`."""
        result = dict(env)
        if self.private_tmp is not None:
            for name in TMP_VARIABLES:
                result[name] = self.private_tmp
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
        return any(_within(candidate, grant.path) for candidate in candidates for grant in grants)

    def to_json(self) -> str:
        """The policy as wire JSON (camelCase), the form ``python -m host_bridge.sandbox.run`` takes."""
        return self.model_dump_json(by_alias=True)


TMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")
"""The environment variables that point programs at a temp folder."""

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

SOCKET_VARIABLES = ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS")
"""Environment variables that point at another program's UNIX socket (ssh-agent, the session bus): not passed to a
confined server unless the user let it reach other programs' sockets."""

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


@dataclass(frozen=True)
class CachePath:
    """A folder of a package manager: the environment variable that moves it, and its default under home."""

    variable: str
    """The variable that sets it (``""``: none); its value replaces the default."""
    default: str
    """Where it is without the variable, relative to home."""
    create: bool = True
    """Made (0700) before the sandbox is applied when missing; otherwise granted only if it exists."""


@dataclass(frozen=True)
class LauncherCache:
    """A package manager that downloads and installs a server when it starts, and where it must write to."""

    launchers: tuple[str, ...]
    """Executable names (as started, resolved, or as a script's interpreter) that mean this package manager."""
    writable: tuple[CachePath, ...]
    """The folders it writes."""
    readable: tuple[CachePath, ...] = ()
    """The folders it only reads (its configuration)."""
    withheld: tuple[CachePath, ...] = ()
    """Configuration it would read but is not given, because it holds credentials: a warning says so when the file
    exists."""
    why: str = ""


LAUNCHER_CACHES = (
    LauncherCache(
        launchers=("npx", "npm", "npx-cli.js", "npm-cli.js", "pnpm", "pnpx", "yarn", "bunx"),
        # npx -y keeps its downloads in _cacache and installs the package under _npx/<hash>; _logs is where npm
        # writes the debug log its error messages point to. Nothing else in ~/.npm is needed. ~/.npmrc is withheld:
        # npm login keeps registry tokens there (worms harvest it), and npm silently skips a user config it cannot
        # read, so npx then uses the registry and proxy of npm_config_* / HTTPS_PROXY variables or the defaults.
        writable=(
            CachePath("npm_config_cache", ".npm/_cacache"),
            CachePath("npm_config_cache", ".npm/_npx"),
            CachePath("npm_config_cache", ".npm/_logs"),
        ),
        withheld=(CachePath("npm_config_userconfig", ".npmrc"),),
        why="npm's cache, where npx installs the server",
    ),
    LauncherCache(
        launchers=("uv", "uvx"),
        # uvx builds the tool's environment in its cache and locks it there; it also locks and stamps the tools
        # folder (even when the tool is not installed), and puts a Python it has to download in the python folder.
        writable=(
            CachePath("UV_CACHE_DIR", ".cache/uv"),
            CachePath("UV_TOOL_DIR", ".local/share/uv/tools"),
            CachePath("UV_PYTHON_INSTALL_DIR", ".local/share/uv/python"),
        ),
        readable=(CachePath("", ".config/uv", create=False),),
        why="uv's cache and tools, where uvx installs the server",
    ),
    LauncherCache(
        launchers=("pipx",),
        # From pipx's documentation (not exercised by the tests): pipx run keeps its environments under PIPX_HOME
        # (the legacy ~/.local/pipx when it exists) and pip caches its downloads.
        writable=(
            CachePath("PIPX_HOME", ".local/share/pipx"),
            CachePath("PIPX_HOME", ".local/pipx", create=False),
            CachePath("PIP_CACHE_DIR", ".cache/pip"),
        ),
        why="pipx's environments and pip's cache, where pipx run installs the server",
    ),
)
"""Package managers that fetch a server at start (``npx -y``, ``uvx``, ``pipx run``) and what each must write."""

_NPM_CACHE_PARTS = {".npm/_cacache": "_cacache", ".npm/_npx": "_npx", ".npm/_logs": "_logs"}

VERSION_MANAGERS = (".pyenv", ".volta", ".asdf", ".rbenv", ".nodenv", ".local/share/mise")
"""Version managers (relative to home) whose shims need their whole root when a server is started through one: a
shim reads the manager's own scripts and configuration before it starts the real runtime under the same root. (A
runtime started by its real path gets only its own install prefix.)"""

PACKAGE_MARKERS = (
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "pyvenv.cfg",
    "deno.json",
    "deno.jsonc",
    "go.mod",
    "Cargo.toml",
)
"""Files that mark the root of a program's package."""

PROGRAM_SUFFIXES = frozenset(
    {".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx", ".py", ".pyw", ".pyz", ".rb", ".php", ".pl"}
    | {".jar", ".lua", ".sh", ".wasm"}
)
"""File name endings that make an argument a program file (whose package is granted read-only)."""

INTERPRETERS = re.compile(r"^(node|nodejs|deno|bun|python[0-9.]*|pypy[0-9.]*|ruby|php|perl|lua|java|tsx|ts-node)$")
"""Executable names whose first file argument is the program they run, whatever its name ends with."""

_HOME_WIDE = (".local", ".config", ".cache", "Library", ".var")
"""Folders directly under home that mix many programs' data: never granted whole as an install prefix."""


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
    the user has *not* necessarily shared; a runtime grant that would expose one of them gets a warning.
    ``platform`` defaults to this one (other values compute the paths without probing this machine's kernel).
    ``read_only_folders`` are consented folders shared read only; ``network`` and ``unix_sockets`` are the server's
    settings (see :attr:`SandboxPolicy.network`, :attr:`SandboxPolicy.unix_sockets`).
    """
    platform = sys.platform if platform is None else platform
    mechanism = mechanism_for(platform)
    home_path = Path(os.path.abspath(home))
    tmp = _canonical(private_tmp) if private_tmp is not None else None
    shared = [_canonical(folder) for folder in shared_folders]
    shared_read = [_canonical(folder) for folder in read_only_folders if _canonical(folder) not in shared]
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
        readable += _linked_config()
        writable += [PathGrant(path=p, kind="device", why="a device") for p in LINUX_DEVICES]
    readable += _git_user_config(home_path, env)

    runtime = _Runtime(home_path, env, cwd)
    program = str(executable)
    if os.sep not in program:
        program = shutil.which(program, path=env.get("PATH", os.defpath)) or program
    runtime.add_executable(Path(os.path.abspath(program)), depth=0)
    runtime.add_program_files(Path(program).name, args)
    readable += runtime.read
    writable += runtime.write
    readable += [
        PathGrant(path=str(_canonical(p)), kind="allowed", why="you allowed it read-only") for p in allowed_read
    ]

    read_execute, read_write = _minimal(readable, writable)
    warnings = (*runtime.warnings, *_warnings(read_execute, read_write, shared, home_path, workspace_folders))

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
        summary="",
        warnings=tuple(dict.fromkeys(warnings)),
        network=network,
        unix_sockets=unix_sockets,
    )
    return policy.model_copy(update={"summary": _summary(policy, shared, home_path, reason, shared_read)})


def make_private_tmp(server_id: str, parent: str | Path | None = None) -> Path:
    """A new, empty temp folder (mode 0700) for one server start; the caller removes it once the server is gone."""
    import tempfile

    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", server_id)[:40] or "server"
    return Path(tempfile.mkdtemp(prefix=f"host-bridge-{safe}-", dir=None if parent is None else str(parent)))


class _Runtime:
    """Collects the read-only (and cache) grants of a server's runtime."""

    def __init__(self, home: Path, env: Mapping[str, str], cwd: str | Path | None) -> None:
        self.home = home
        self.env = env
        self.cwd = Path(os.path.abspath(cwd)) if cwd is not None else Path.cwd()
        self.read: list[PathGrant] = []
        self.write: list[PathGrant] = []
        self.warnings: list[str] = []
        self._names: set[str] = set()

    def add_executable(self, given: Path, *, depth: int, role: str = "the server's executable") -> None:
        real = Path(os.path.realpath(given))
        name = given.name
        self._names.update({given.name, real.name})
        if not given.is_symlink() and given != real:
            self._prefix(given, f"{role} ({name})")
        self._prefix(real, f"{role} ({name})")
        venv = _venv_root(given)
        if venv is not None:
            self._grant(venv, "runtime", f"the virtual environment of {name}")
            base = _venv_base_prefix(venv)
            if base is not None:
                self._prefix_dir(base, f"the base interpreter of {venv.name}")
        elif INTERPRETERS.match(real.name) and real.name.startswith(("python", "pypy")):
            for site in sorted((self.home / ".local" / "lib").glob("python3*")):
                self._grant(site, "runtime", "Python's user site-packages")
        manager = self._version_manager(given)
        if manager is not None:
            self._grant(manager, "runtime", f"the version manager that starts {name}")
        if _same_file(real, Path(sys.executable)) or (venv is not None and _same_file(venv, Path(sys.prefix))):
            self._grant(Path(sys.prefix), "hostBridge", "host_bridge's own Python environment")
            self._grant(Path(sys.base_prefix), "hostBridge", "host_bridge's base Python")
        self._caches()
        if depth < 2:
            interpreter = _shebang_interpreter(real, self.env)
            if interpreter is not None:
                self.add_executable(interpreter, depth=depth + 1, role=f"the interpreter of {name}")

    def add_program_files(self, launcher: str, args: Sequence[str]) -> None:
        """Grant the package of each argument that names an existing program file: one whose name ends like code,
        or an interpreter's first argument when no option comes right before it (that could be the option's
        value, such as ``node --config settings.json``)."""
        interpreter = INTERPRETERS.match(launcher) is not None
        seen_positional = False
        previous = ""
        for arg in args:
            option_value = arg.startswith("-") and "=" in arg
            value = arg.split("=", 1)[1] if option_value else arg
            entry = interpreter and not seen_positional and not arg.startswith("-") and not previous.startswith("-")
            seen_positional = seen_positional or not arg.startswith("-")
            previous = arg
            if (arg.startswith("-") and not option_value) or not value:
                continue
            path = Path(value) if os.path.isabs(value) else self.cwd / value
            if not path.is_file() or not (entry or path.suffix in PROGRAM_SUFFIXES):
                continue
            root = _package_root(Path(os.path.abspath(path)), self.home)
            if root is None:
                self._grant(path, "package", "the program file it runs")
            else:
                self._grant(root, "package", f"the package of {path.name}")
                real_root = _package_root(Path(os.path.realpath(path)), self.home)
                if real_root is not None and real_root != root:
                    self._grant(real_root, "package", f"the package of {path.name}")

    def _caches(self) -> None:
        for cache in LAUNCHER_CACHES:
            if not self._names.intersection(cache.launchers):
                continue
            for entry in cache.writable:
                self._cache_path(entry, cache.why, write=True)
            for entry in cache.readable:
                self._cache_path(entry, cache.why, write=False)
            for entry in cache.withheld:
                path = self._cache_location(entry)
                if path.exists():
                    self.warnings.append(
                        f"{path} is not readable in the sandbox because it can hold registry tokens; "
                        "the package manager uses its defaults and npm_config_* variables instead. "
                        "Allow it read-only for this server if it needs a private registry or proxy from there."
                    )

    def _cache_location(self, entry: CachePath) -> Path:
        configured = self.env.get(entry.variable) if entry.variable else None
        if not configured:
            return self.home / entry.default
        path = Path(os.path.expanduser(configured))
        part = _NPM_CACHE_PARTS.get(entry.default)
        return path / part if part else path

    def _cache_path(self, entry: CachePath, why: str, *, write: bool) -> None:
        path = self._cache_location(entry)
        if _is_home_or_above(path, self.home) or (not entry.create and not path.exists()):
            return
        grant = PathGrant(path=str(_canonical(path)), kind="cache", why=why, create=write and entry.create)
        (self.write if write else self.read).append(grant)

    def _version_manager(self, given: Path) -> Path | None:
        """The root of the version manager whose shim ``given`` is (``~/.pyenv/shims/python3`` → ``~/.pyenv``)."""
        for relative in VERSION_MANAGERS:
            root = self.home / relative
            shim = given.parent.name == "shims" or (relative == ".volta" and given.parent == root / "bin")
            if shim and _within(str(given), str(root)):
                return root
        return None

    def _prefix(self, file: Path, why: str) -> None:
        folder = file.parent
        if folder.name in ("bin", "sbin"):
            folder = folder.parent
        self._prefix_dir(folder, why, fallback=file)

    def _prefix_dir(self, folder: Path, why: str, *, fallback: Path | None = None) -> None:
        if self._too_wide(folder):
            if fallback is not None:
                self._grant(fallback, "runtime", why)
            return
        self._grant(folder, "runtime", f"the install prefix of {why}" if fallback is not None else why)

    def _too_wide(self, folder: Path) -> bool:
        if _is_home_or_above(folder, self.home) or folder == Path(folder.anchor):
            return True
        return folder.parent == self.home and folder.name in _HOME_WIDE

    def _grant(self, path: Path, kind: GrantKind, why: str) -> None:
        if _is_home_or_above(path, self.home) or path == Path(path.anchor):
            return
        self.read.append(PathGrant(path=str(_canonical(path)), kind=kind, why=why))


def _linked_config() -> list[PathGrant]:
    grants: list[PathGrant] = []
    for link in LINUX_LINKED_CONFIG:
        target = os.path.realpath(link)
        if target != link and not _within(target, "/etc") and not _within(target, "/usr"):
            grants.append(PathGrant(path=target, kind="system", why=f"the target of {link}"))
    return grants


def _git_user_config(home: Path, env: Mapping[str, str]) -> list[PathGrant]:
    """git's own per-user settings files, read-only: git stops on a settings file it may not read (it only
    tolerates a missing one), so every git-based server would fail. Credentials live elsewhere and stay refused."""
    config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    files = [home / ".gitconfig", *(config_home / "git" / name for name in ("config", "ignore", "attributes"))]
    return [
        PathGrant(path=str(_canonical(f)), kind="system", why="git's settings (git stops when it cannot read them)")
        for f in files
        if f.is_file()
    ]


def _venv_root(executable: Path) -> Path | None:
    root = executable.parent.parent
    return root if (root / "pyvenv.cfg").is_file() else None


def _venv_base_prefix(venv: Path) -> Path | None:
    """The prefix of the interpreter a virtual environment was made from (``home`` in ``pyvenv.cfg``)."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            home = Path(os.path.realpath(value.strip()))
            return home.parent if home.name == "bin" else home
    return None


def _shebang_interpreter(script: Path, env: Mapping[str, str]) -> Path | None:
    """The interpreter a ``#!`` line names (through ``/usr/bin/env``, looked up on ``env``'s ``PATH``)."""
    try:
        with script.open("rb") as file:
            head = file.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        names = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
        if not names:
            return None
        found = shutil.which(names[0], path=env.get("PATH", os.defpath))
        return Path(found) if found else None
    return Path(words[0]) if os.path.isabs(words[0]) else None


def _package_root(file: Path, home: Path) -> Path | None:
    """The package a program file belongs to: the outermost ``node_modules`` it is in, else the nearest folder
    (below home) with a package marker, else its own folder; ``None`` when that would be home or above it."""
    parts = file.parts[:-1]
    if "node_modules" in parts:
        root = Path(*parts[: parts.index("node_modules") + 1])
        return None if _is_home_or_above(root, home) else root
    for folder in file.parents:
        if _is_home_or_above(folder, home) or folder == Path(folder.anchor):
            break
        if any((folder / marker).is_file() for marker in PACKAGE_MARKERS):
            return folder
    folder = file.parent
    if _is_home_or_above(folder, home) or folder == Path(folder.anchor) or folder.parent == home:
        return None
    return folder


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
        if any(_within(grant.path, other) for other in covered):
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
    workspace_folders: Iterable[str | Path],
) -> tuple[str, ...]:
    warnings: list[str] = []
    for folder in shared:
        if _is_home_or_above(folder, home):
            warnings.append(
                f"{folder} is shared, which holds your whole home folder ({home}), secrets such as ~/.ssh included."
            )
    others = [_canonical(f) for f in workspace_folders]
    for grant in (*read, *write):
        if grant.kind in ("shared", "tmp", "system", "device"):
            continue
        for folder in others:
            if any(_within(str(folder), str(s)) for s in shared):
                continue
            if _within(str(folder), grant.path) or _within(grant.path, str(folder)):
                warnings.append(
                    f"The server can read {grant.path} ({grant.why}), which is or contains {folder}; "
                    "that folder is not shared with it."
                )
    return tuple(dict.fromkeys(warnings))


def _summary(
    policy: SandboxPolicy, shared: Sequence[Path], home: Path, reason: str, shared_read: Sequence[Path] = ()
) -> str:
    if not policy.requested:
        return "The sandbox is off for this server (its setting): it can read and write every file your account can."
    if not policy.enforced:
        return reason
    how = f"Linux Landlock (ABI {policy.abi})" if policy.mechanism == "landlock" else "macOS sandbox-exec"
    runtime = [g.path for g in policy.read_execute if g.kind not in ("system", "shared")]
    caches = [g.path for g in policy.read_write if g.kind == "cache"]
    if shared:
        writable = f"{', '.join(str(folder) for folder in shared)} and a private temp folder"
    elif shared_read:
        writable = "a private temp folder"
    else:
        writable = "a private temp folder (no folder is shared with it)"
    text = f"{how} confines this server: it can write only {writable}"
    if caches:
        text += f" (and its package cache: {', '.join(caches)})"
    text += "; it can read system folders"
    if shared_read:
        text += f", {', '.join(str(folder) for folder in shared_read)} (shared read only)"
    if runtime:
        text += f" and its runtime ({', '.join(runtime)})"
    return text + f"; everything else, the rest of {home} included, is refused."


def _canonical(path: str | Path) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def _within(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or beneath it (whole components)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _is_home_or_above(path: Path, home: Path) -> bool:
    resolved = str(_canonical(path))
    return any(_within(str(candidate), resolved) for candidate in (home, _canonical(home)))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def iter_paths(policy: SandboxPolicy) -> Iterator[tuple[str, bool]]:
    """Every granted path with whether it is writable, read-write grants first."""
    for grant in policy.read_write:
        yield grant.path, True
    for grant in policy.read_execute:
        yield grant.path, False
