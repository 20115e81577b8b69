"""Refusals become consent questions: the paths a sandboxed server was refused, read from its stderr.

A server that fails on a path outside its policy usually says so on stderr, in its runtime's words. This module
recognises the common shapes and keeps the paths the policy does not grant, so the host can offer "share this
folder" or "allow this path read-only" instead of a bare crash. Paths in ``/proc``, ``/sys`` and ``/dev`` are left
out (nothing there is a folder to share). Nothing is widened here.

Recognised (``EACCES``/``EPERM``, and ``EXDEV``, which Landlock returns for a rename or link across rules):

* Node: ``Error: EACCES: permission denied, open '/p'`` (and ``scandir``, ``mkdir``, ``copyfile '/a' -> '/b'`` …);
  npm's ``npm error code EACCES`` followed by ``npm error path /p``.
* Python: ``PermissionError: [Errno 13] Permission denied: '/p'``, ``[Errno 1] Operation not permitted: '/a' ->
  '/b'``, ``[Errno 18] Invalid cross-device link: …``.
* Go (``*fs.PathError``): ``open /p: permission denied``, ``mkdir /p: operation not permitted``.
* Rust (uv and others): ``failed to open file `/p`: Permission denied (os error 13)``.
* C tools and shells: ``cat: /p: Permission denied``, ``sh: 1: cannot create /p: Permission denied``,
  ``ls: cannot open directory '/p': Permission denied``.
* Modules not found: Node reports a module it may not read as missing (``Error [ERR_MODULE_NOT_FOUND]: Cannot find
  module '/p'``, ``Cannot find package '/p'``, ``url: 'file:///p'``): the path counts when it exists.

A server writes its own stderr, so what it says is only a claim: a path counts when it exists, lies outside the
policy, and is not ``/``, the home folder or an ancestor of it (nothing a question may offer whole).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from host_bridge.sandbox.grants import is_home_or_above
from host_bridge.sandbox.policy import SandboxPolicy
from host_bridge.wire import WireModel

_NODE = re.compile(
    r"\b(?:EACCES|EPERM|EXDEV)\b[^,\n]*,\s*(?P<op>\w+)\s+'(?P<path>[^']+)'(?:\s*->\s*'(?P<path2>[^']+)')?"
)
_NPM_CODE = re.compile(r"^npm (?:error|ERR!) code (?:EACCES|EPERM)\b")
_NPM_PATH = re.compile(r"^npm (?:error|ERR!) path (?P<path>/.*?)\s*$")
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_PYTHON = re.compile(r"\[Errno (?:13|1|18)\] [^:\n]*: (?P<path>" + _QUOTED + r")(?: -> (?P<path2>" + _QUOTED + r"))?")
_RUST = re.compile(r"`(?P<path>/[^`]+)`[^`\n]*\((?:os error (?:13|1|18))\)")
_TRAILING = re.compile(
    r"(?:^|(?<=[\s'\"‘(]))(?P<path>/[^'\"`’\n]*?)['\"’]?:\s*(?:permission denied|operation not permitted)\b",
    re.IGNORECASE,
)
_GO_TWO_PATHS = re.compile(r"\b(?P<op>rename|link|symlink) (?P<path>/\S+) (?P<path2>/\S+): ", re.IGNORECASE)
_NODE_NOT_FOUND = re.compile(r"Cannot find (?:module|package) '(?P<path>/[^']+)'")
_NODE_URL = re.compile(r"\burl: '(?P<url>file://[^']+)'")


_PSEUDO = ("/proc", "/sys", "/dev")


class Refusal(WireModel):
    """A path the sandbox refused a server, as its stderr told it."""

    path: str
    """The absolute path, as the server named it."""
    folder: str
    """What to offer to share: the path itself when it is a directory, else the folder that holds it."""
    line: str
    """The stderr line it was read from."""
    fatal: bool = False
    """The server exited with a failure after it (the exit status was given and not 0)."""


def claimed_paths(lines: Iterable[str]) -> list[tuple[str, str]]:
    """Every absolute path ``lines`` say was refused or not found, normalised, with its line; each once, in order
    (what the server *claims*: :func:`find_refusals` keeps the real refusals among them)."""
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    npm_code = False
    for raw in lines:
        line = raw.rstrip("\r\n")
        paths = _paths_in(line)
        if _NPM_CODE.search(line):
            npm_code = True
        elif npm_code and (match := _NPM_PATH.search(line)):
            paths.append(match["path"])
            npm_code = False
        for path in paths:
            normal = os.path.normpath(path)
            if normal not in seen and os.path.isabs(normal):
                seen.add(normal)
                found.append((normal, line))
    return found


def outside(path: str, policy: SandboxPolicy, home: Path) -> bool:
    """``path`` exists, lies outside ``policy``, and is something a question may name: not in ``/proc``, ``/sys``
    or ``/dev``, not ``/``, the home folder or an ancestor of it."""
    if _pseudo(path) or policy.allows(path) or not os.path.lexists(path):
        return False
    return not is_home_or_above(Path(path), home)


def find_refusals(
    lines: Iterable[str], policy: SandboxPolicy, exit_status: int | None = None, *, home: str | None = None
) -> list[Refusal]:
    """The refusals in a server's stderr ``lines`` whose path ``policy`` does not grant, each path once, in order.

    A policy that is not enforced refuses nothing (a permission error there is the file system's own). With
    ``exit_status`` (the server's, once it exited) each refusal says whether the server failed after it. Only
    existing paths count, never ``/``, ``home`` (default: the user's) or an ancestor of it.
    """
    if not policy.enforced:
        return []
    home_path = Path(home if home is not None else os.path.expanduser("~"))
    fatal = exit_status is not None and exit_status != 0
    found: list[Refusal] = []
    for path, line in claimed_paths(lines):
        if outside(path, policy, home_path):
            folder = path if os.path.isdir(path) else os.path.dirname(path)
            found.append(Refusal(path=path, folder=folder, line=line, fatal=fatal))
    return found


def refused_paths(
    lines: Iterable[str], policy: SandboxPolicy, exit_status: int | None = None, *, home: str | None = None
) -> list[str]:
    """The paths outside ``policy`` that a server's stderr ``lines`` say were refused (see :func:`find_refusals`)."""
    return [refusal.path for refusal in find_refusals(lines, policy, exit_status, home=home)]


def _paths_in(line: str) -> list[str]:
    paths: list[str] = []
    for match in _NODE.finditer(line):
        paths += [p for p in (match["path"], match["path2"]) if p]
    for match in _PYTHON.finditer(line):
        paths += [_unquote(p) for p in (match["path"], match["path2"]) if p]
    for match in _RUST.finditer(line):
        paths.append(match["path"])
    paths += [match["path"] for match in _NODE_NOT_FOUND.finditer(line)]
    for match in _NODE_URL.finditer(line):
        url = urlsplit(match["url"])
        if url.netloc in ("", "localhost"):
            paths.append(unquote(url.path))
    if not paths:
        two = _GO_TWO_PATHS.search(line)
        if two is not None and re.search(r"permission denied|operation not permitted", line, re.IGNORECASE):
            paths += [two["path"], two["path2"]]
        else:
            paths += [match["path"].rstrip() for match in _TRAILING.finditer(line)]
    return paths


def _pseudo(path: str) -> bool:
    """A path in ``/proc``, ``/sys`` or ``/dev``: nothing there can be shared as a folder."""
    return any(path == root or path.startswith(root + "/") for root in _PSEUDO)


def _unquote(literal: str) -> str:
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return literal[1:-1]
    return value if isinstance(value, str) else literal[1:-1]
