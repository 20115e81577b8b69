"""The read-only grants of a server's runtime: the package tree of what it runs, found the way its launcher finds it.

* **An executable** gets the package tree it belongs to, from its real path (every symlink resolved, as the kernel
  resolves it): inside a ``node_modules`` the *outermost* ``node_modules`` (npm's ``node_modules/.bin``, the
  ``lib/node_modules`` of an npm, yarn or bun global prefix, pnpm's ``.pnpm`` store), where Node looks up its
  dependencies; otherwise its install prefix, the folder holding it or the one above a ``bin`` (``/usr/local/bin/node``
  → ``/usr/local``; a venv's console script → the venv; pipx and ``uv tool`` → the tool's own venv; nvm and fnm →
  that Node version). A single binary in a per-user tool folder that holds other things (``~/.cargo/bin`` beside
  ``credentials.toml``, ``~/go/bin``, ``~/.local/bin`` …) gets the file alone.
* **A virtual environment** (``pyvenv.cfg`` beside the executable's ``bin``) is granted whole. Its base interpreter
  is the real path of the venv's ``python`` (a symlink to it), never ``pyvenv.cfg``'s ``home =``, which whoever
  writes the venv (a repository, a server in its shared folder) can point anywhere; a venv of copies gets a ``home``
  only when that folder holds the very same interpreter, byte for byte.
* **A script's** ``#!`` interpreter is granted like an executable; a version manager's shim gets the manager's root
  (``~/.pyenv`` …), which its scripts read before they start the real runtime.
* **A program file** named in the arguments grants its package: the outermost ``node_modules`` it is in, else the
  nearest folder with a package marker, but never above the shared or workspace folder holding the file (a server
  that deletes the marker in its shared folder cannot move its package up into the rest of the repository), and
  never home.

No runtime grant is ever the home folder, an ancestor of it, or ``/``.
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from host_bridge.sandbox.grants import GrantKind, PathGrant, canonical, is_home_or_above, is_root, same_file, within

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

HOME_MIXED = (".local", ".config", ".cache", "Library", ".var", ".cargo", "go", ".deno", ".bun", "bin")
"""Folders directly under home that mix a tool's binaries with other things (data, caches, credentials such as
``~/.cargo/credentials.toml``): never granted whole as an install prefix; a binary in their ``bin`` gets the file
alone."""


class Runtime:
    """Collects the read-only grants of a server's runtime, and the names of what it runs."""

    def __init__(
        self, home: Path, env: Mapping[str, str], cwd: str | Path | None, boundaries: Iterable[Path] = ()
    ) -> None:
        self.home = home
        """The user's home folder: never granted, nor anything above it."""
        self.env = env
        """The server's environment (its ``PATH`` finds a script's interpreter)."""
        self.cwd = Path(os.path.abspath(cwd)) if cwd is not None else Path.cwd()
        """Where relative program files are found."""
        self.boundaries = tuple(canonical(b) for b in boundaries)
        """Shared and workspace folders: a package root is never looked for above the one holding a program file."""
        self.read: list[PathGrant] = []
        """The grants found."""
        self.names: set[str] = set()
        """The names of every executable in the chain (as started, resolved, and interpreters)."""

    def add_executable(self, given: Path, *, depth: int, role: str = "the server's executable") -> None:
        """Grant what ``given`` needs to run: its package tree, its venv, its interpreter (up to two ``#!`` deep)."""
        real = Path(os.path.realpath(given))
        name = given.name
        self.names.update({given.name, real.name})
        if not given.is_symlink() and given != real:
            self._tree(given, f"{role} ({name})")
        self._tree(real, f"{role} ({name})")
        venv = venv_root(given)
        if venv is not None:
            self._grant(venv, "runtime", f"the virtual environment of {name}")
            if within(str(real), str(canonical(venv))):
                base = copied_interpreter_home(venv, real)
                if base is not None:
                    self._prefix_dir(base, f"the base interpreter of {venv.name}")
            for link in (venv / "bin" / "python3", venv / "bin" / "python"):
                if link.is_symlink() and link != given:
                    self._tree(Path(os.path.realpath(link)), f"the base interpreter of {venv.name}")
                    break
        elif INTERPRETERS.match(real.name) and real.name.startswith(("python", "pypy")):
            for site in sorted((self.home / ".local" / "lib").glob("python3*")):
                self._grant(site, "runtime", "Python's user site-packages")
        manager = self._version_manager(given)
        if manager is not None:
            self._grant(manager, "runtime", f"the version manager that starts {name}")
        if same_file(real, Path(sys.executable)) or (venv is not None and same_file(venv, Path(sys.prefix))):
            self._grant(Path(sys.prefix), "hostBridge", "host_bridge's own Python environment")
            self._grant(Path(sys.base_prefix), "hostBridge", "host_bridge's base Python")
        if depth < 2:
            interpreter = shebang_interpreter(real, self.env)
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
            real = Path(os.path.realpath(path))
            root = package_root(real, self.home, self.boundaries)
            self._grant(root or real, "package", f"the package of {path.name}" if root else "the program file it runs")
            modules = outermost_node_modules(Path(os.path.abspath(path)))
            if modules is not None and not is_home_or_above(modules, self.home):
                self._grant(modules, "package", f"the packages installed beside {path.name}")

    def _version_manager(self, given: Path) -> Path | None:
        """The root of the version manager whose shim ``given`` is (``~/.pyenv/shims/python3`` → ``~/.pyenv``)."""
        for relative in VERSION_MANAGERS:
            root = self.home / relative
            shim = given.parent.name == "shims" or (relative == ".volta" and given.parent == root / "bin")
            if shim and within(str(given), str(root)):
                return root
        return None

    def _tree(self, file: Path, why: str) -> None:
        """Grant the package tree ``file`` belongs to: its outermost ``node_modules``, else its install prefix."""
        modules = outermost_node_modules(file)
        if modules is not None and not is_home_or_above(modules, self.home):
            self._grant(modules, "package", f"the packages installed beside {why}")
            return
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
        if is_home_or_above(folder, self.home) or is_root(folder):
            return True
        return folder.parent in (self.home, canonical(self.home)) and folder.name in HOME_MIXED

    def _grant(self, path: Path, kind: GrantKind, why: str) -> None:
        if is_home_or_above(path, self.home) or is_root(path):
            return
        self.read.append(PathGrant(path=str(canonical(path)), kind=kind, why=why))


def outermost_node_modules(file: Path) -> Path | None:
    """The outermost ``node_modules`` folder ``file`` is in (by its path as given), or ``None``."""
    parts = file.parts[:-1]
    if "node_modules" not in parts:
        return None
    return Path(*parts[: parts.index("node_modules") + 1])


def venv_root(executable: Path) -> Path | None:
    """The virtual environment ``executable`` is in (``VENV/bin/x`` with a ``VENV/pyvenv.cfg``), or ``None``."""
    root = executable.parent.parent
    return root if (root / "pyvenv.cfg").is_file() else None


def copied_interpreter_home(venv: Path, interpreter: Path) -> Path | None:
    """The prefix of the base interpreter a venv of copies was made from: a ``home =`` of its ``pyvenv.cfg`` that holds
    a file identical to ``interpreter`` (the venv's copy). A ``home`` that does not is ignored, so editing the file
    never points the policy at another folder."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() != "home" or not value.strip():
            continue
        original = Path(value.strip()) / interpreter.name
        try:
            identical = original.is_file() and filecmp.cmp(original, interpreter, shallow=False)
        except OSError:
            identical = False
        if identical:
            home = canonical(original).parent
            return home.parent if home.name == "bin" else home
    return None


def shebang_interpreter(script: Path, env: Mapping[str, str]) -> Path | None:
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


def package_root(file: Path, home: Path, boundaries: Sequence[Path] = ()) -> Path | None:
    """The package a program file belongs to: the outermost ``node_modules`` it is in, else the nearest folder with a
    package marker no higher than the innermost of ``boundaries`` holding the file (and below home), else its own
    folder; ``None`` when that would be home or above it."""
    modules = outermost_node_modules(file)
    if modules is not None:
        return None if is_home_or_above(modules, home) else modules
    holding = [b for b in boundaries if within(str(file), str(b)) and str(file) != str(b)]
    cap = max(holding, key=lambda b: len(b.parts)) if holding else None
    for folder in file.parents:
        if is_home_or_above(folder, home) or is_root(folder):
            break
        if any((folder / marker).is_file() for marker in PACKAGE_MARKERS):
            return folder
        if cap is not None and folder == cap:
            break
    folder = file.parent
    if is_home_or_above(folder, home) or is_root(folder) or folder.parent == home:
        return None
    return folder
