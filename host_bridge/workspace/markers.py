"""Project marker files of many ecosystems: which file names mark a project, its name, its workspace members.

Everything here is pure text parsing except :func:`read_manifest`, :func:`read_text`, :func:`project_name` and
:func:`workspace_members`, which read at most :data:`MAX_READ` bytes of a manifest as a bounded regular file
(:mod:`host_bridge.safe_read`). Manifests come from repositories and are treated as hostile: JSON and TOML
nested deeper than :data:`MAX_NESTING` are not parsed, XML is parsed by expat through ``defusedxml`` (no DTDs,
no entities, bounded depth), member globs are matched by ``wcmatch`` and every regular expression here runs in
linear time. Bad, truncated or hostile content never raises: it yields ``None`` and the caller falls back to the
directory name.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from wcmatch import glob

# defusedxml, configparser and wcmatch are imported where used: a listing without pom.xml, setup.cfg or member
# globs (and so `host-bridge roots` on most folders) never loads them.

from host_bridge.jsonc import MAX_NESTING, JsoncError, loads_json, loads_jsonc, nesting_within
from host_bridge.safe_read import RepoFileError, read_repo_text

MAX_READ = 256 * 1024
"""Bytes of a manifest read at most; names and member lists sit near the top."""

MARKER_FILES: Mapping[str, str] = {
    "pyproject.toml": "Python",
    "setup.cfg": "Python",
    "setup.py": "Python",
    "package.json": "Node",
    "pnpm-workspace.yaml": "Node",
    "deno.json": "Deno",
    "deno.jsonc": "Deno",
    "Cargo.toml": "Rust",
    "go.mod": "Go",
    "go.work": "Go",
    "pom.xml": "Maven",
    "settings.gradle": "Gradle",
    "settings.gradle.kts": "Gradle",
    "build.gradle": "Gradle",
    "build.gradle.kts": "Gradle",
    "Gemfile": "Ruby",
    "composer.json": "PHP",
    "mix.exs": "Elixir",
    "pubspec.yaml": "Dart",
    "Package.swift": "Swift",
    "build.sbt": "Scala",
    "stack.yaml": "Haskell",
    "package.yaml": "Haskell",
    "build.zig": "Zig",
    "build.zig.zon": "Zig",
    "CMakeLists.txt": "CMake",
}
"""Exact marker file names → ecosystem."""

MARKER_SUFFIXES: Mapping[str, str] = {
    ".csproj": ".NET",
    ".fsproj": ".NET",
    ".vbproj": ".NET",
    ".sln": ".NET",
    ".gemspec": "Ruby",
    ".cabal": "Haskell",
}
"""Marker file name endings (``*.csproj`` …) → ecosystem."""

SUFFIXES: tuple[str, ...] = tuple(MARKER_SUFFIXES)
"""The keys of :data:`MARKER_SUFFIXES`, ready for :meth:`str.endswith`."""

WORKSPACE_MANIFESTS = frozenset({"package.json", "pnpm-workspace.yaml", "Cargo.toml", "pyproject.toml", "go.work"})
"""Marker files that may declare monorepo members."""

# Which manifest's name wins when a folder has several: the most specific metadata first.
_NAME_PRIORITY = (
    "pyproject.toml",
    "Cargo.toml",
    "package.json",
    "deno.json",
    "deno.jsonc",
    "go.mod",
    "pom.xml",
    "settings.gradle.kts",
    "settings.gradle",
    "composer.json",
    "mix.exs",
    "pubspec.yaml",
    "Package.swift",
    "build.sbt",
    ".cabal",
    "package.yaml",
    "build.zig.zon",
    ".gemspec",
    "setup.cfg",
    "setup.py",
    ".csproj",
    ".fsproj",
    ".vbproj",
    ".sln",
    "CMakeLists.txt",
)

_MAX_NAME = 200
_TOML_TOKEN = re.compile(r"""#[^\n]*|"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?|[\[\]{}]""")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SETUP_PY_NAME = re.compile(r"""\bname\s*=\s*(['"])([^'"\n]+)\1""")
_GO_MODULE = re.compile(r"""^[ \t]*module[ \t]+("?)([^\s"]+)\1""", re.M)
_GRADLE_ROOT = re.compile(r"""\brootProject\.name\s*=\s*(['"])([^'"\n]+)\1""")
_GEMSPEC_NAME = re.compile(r"""\.name\s*=\s*(['"])([^'"\n]+)\1""")
_MIX_APP = re.compile(r"""\bapp:\s*:"?([A-Za-z_][\w]*[?!]?)""")
_YAML_NAME = re.compile(r"""^name\s*:\s*(['"]?)([^'"\s#]+)\1""", re.M)
_CABAL_NAME = re.compile(r"""^name\s*:\s*(\S+)""", re.M | re.I)
_SWIFT_PACKAGE = re.compile(r"""\bPackage\s*\(\s*name\s*:\s*"([^"\n]+)\"""")
_SWIFT_ANY = re.compile(r"""\bname\s*:\s*"([^"\n]+)\"""")
_SBT_NAME = re.compile(r"""\bname\s*:=\s*"([^"\n]+)\"""")
_ZON_NAME = re.compile(r"""\.name\s*=\s*(?:"([^"\n]+)"|\.@"([^"\n]+)"|\.([A-Za-z_]\w*))""")
_CMAKE_PROJECT = re.compile(r"""^[ \t]*project\s*\(\s*(?:"([^"\n]+)"|([^\s)"]+))""", re.M | re.I)
_GO_COMMENT = re.compile(r"//[^\n]*")
_YAML_ITEM = re.compile(r"^\s*-\s*(.*?)\s*$")
_YAML_KEY = re.compile(r"^packages\s*:\s*(.*?)\s*$")


def ecosystem_of(file_name: str) -> str | None:
    """The ecosystem a marker file name belongs to, or ``None`` when it is not a marker."""
    found = MARKER_FILES.get(file_name)
    if found is not None:
        return found
    for suffix, ecosystem in MARKER_SUFFIXES.items():
        if file_name.endswith(suffix) and len(file_name) > len(suffix):
            return ecosystem
    return None


def is_marker(file_name: str) -> bool:
    """Whether a file with this name marks its directory as a project."""
    return file_name in MARKER_FILES or (file_name.endswith(SUFFIXES) and not file_name.startswith("."))


def read_manifest(path: str, limit: int = MAX_READ) -> str:
    """The first ``limit`` bytes of the manifest at ``path`` as text; :class:`RepoFileError` if it cannot be used.

    Symlinks are not followed, FIFOs, devices and system files are refused without blocking
    (:func:`host_bridge.safe_read.read_repo_file`), and the bytes must be UTF-8.
    """
    return read_repo_text(path, limit, follow_symlinks=False, truncate=True)


def read_text(path: str, limit: int = MAX_READ) -> str | None:
    """:func:`read_manifest`, or ``None`` if the file cannot be used."""
    try:
        return read_manifest(path, limit)
    except RepoFileError:
        return None


def clean_name(value: object) -> str | None:
    """``value`` as a display name, or ``None`` if it is unusable (empty, templated, control characters)."""
    if not isinstance(value, str):
        return None
    name = value.strip()
    if not name or len(name) > _MAX_NAME or _CONTROL.search(name) or "${" in name or "$(" in name:
        return None
    return name


def _lookup(data: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = cast(dict[str, Any], data).get(key)
    return data


def _toml(text: str) -> dict[str, Any] | None:
    if not nesting_within(text, _TOML_TOKEN):
        return None
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError):
        return None


def _json(text: str, *, comments: bool = False) -> object:
    try:
        return loads_jsonc(text) if comments else loads_json(text)
    except JsoncError:
        return None


class _Stop(Exception):
    """Ends an XML parse early: the answer is known, or the document nests too deeply."""


class _PomTarget:
    """Parser target that finds ``<project>``'s own ``<artifactId>`` (depth 2; ``<parent>``'s sits deeper)."""

    def __init__(self) -> None:
        self.depth = 0
        self.collecting = False
        self.text: list[str] = []
        self.found: str | None = None

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _Stop
        self.collecting = self.depth == 2 and tag.rpartition("}")[2] == "artifactId"

    def end(self, tag: str) -> None:
        if self.collecting:
            self.found = "".join(self.text)
            raise _Stop
        self.depth -= 1

    def data(self, data: str) -> None:
        if self.collecting:
            self.text.append(data)

    def close(self) -> None:
        return None


def _pom_artifact_id(text: str) -> str | None:
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import XMLParser

    target = _PomTarget()
    # expat parses in linear time; defusedxml refuses DTDs and entity declarations (billion laughs, XXE).
    parser = XMLParser(target=target, forbid_dtd=True)
    try:
        parser.feed(text)
        parser.close()
    except _Stop:
        pass
    except (SyntaxError, ValueError, DefusedXmlException):  # ParseError is a SyntaxError
        pass
    return clean_name(target.found)


def _setup_cfg_name(text: str) -> str | None:
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
        return clean_name(parser.get("metadata", "name", fallback=None))
    except (configparser.Error, ValueError):
        return None


def _setup_py_name(text: str) -> str | None:
    start = text.find("setup(")
    match = _SETUP_PY_NAME.search(text, max(start, 0))
    return clean_name(match.group(2)) if match else None


def _group(pattern: re.Pattern[str], text: str, *groups: int) -> str | None:
    match = pattern.search(text)
    if match is None:
        return None
    return clean_name(next((match.group(g) for g in groups if match.group(g)), None))


def _pyproject_name(text: str) -> str | None:
    data = _toml(text)
    return clean_name(_lookup(data, "project", "name")) or clean_name(_lookup(data, "tool", "poetry", "name"))


def _swift_name(text: str) -> str | None:
    return _group(_SWIFT_PACKAGE, text, 1) or _group(_SWIFT_ANY, text, 1)


_PARSERS: Mapping[str, Callable[[str], str | None]] = {
    "pyproject.toml": _pyproject_name,
    "setup.cfg": _setup_cfg_name,
    "setup.py": _setup_py_name,
    "package.json": lambda text: clean_name(_lookup(_json(text), "name")),
    "composer.json": lambda text: clean_name(_lookup(_json(text), "name")),
    "deno.json": lambda text: clean_name(_lookup(_json(text, comments=True), "name")),
    "deno.jsonc": lambda text: clean_name(_lookup(_json(text, comments=True), "name")),
    "Cargo.toml": lambda text: clean_name(_lookup(_toml(text), "package", "name")),
    "go.mod": lambda text: _group(_GO_MODULE, _GO_COMMENT.sub("", text), 2),
    "pom.xml": _pom_artifact_id,
    "settings.gradle": lambda text: _group(_GRADLE_ROOT, text, 2),
    "settings.gradle.kts": lambda text: _group(_GRADLE_ROOT, text, 2),
    "mix.exs": lambda text: _group(_MIX_APP, text, 1),
    "pubspec.yaml": lambda text: _group(_YAML_NAME, text, 2),
    "package.yaml": lambda text: _group(_YAML_NAME, text, 2),
    "Package.swift": _swift_name,
    "build.sbt": lambda text: _group(_SBT_NAME, text, 1),
    "build.zig.zon": lambda text: _group(_ZON_NAME, text, 1, 2, 3),
    "CMakeLists.txt": lambda text: _group(_CMAKE_PROJECT, text, 1, 2),
    ".gemspec": lambda text: _group(_GEMSPEC_NAME, text, 2),
    ".cabal": lambda text: _group(_CABAL_NAME, text, 1),
}


def _kind(file_name: str) -> str:
    """The key of ``file_name`` in the parser and priority tables: itself, or its marker suffix."""
    if file_name in MARKER_FILES:
        return file_name
    return next((s for s in SUFFIXES if file_name.endswith(s)), file_name)


def _stem(file_name: str) -> str | None:
    kind = _kind(file_name)
    return clean_name(file_name[: -len(kind)]) if kind in MARKER_SUFFIXES else None


def name_from_manifest(file_name: str, text: str | None) -> str | None:
    """The project name a manifest declares, or ``None``.

    ``file_name`` is the manifest's base name (it selects the parser); ``text`` its content, or ``None``
    when it could not be read. ``*.csproj``-style files and ``*.sln`` are named by their stem; ``*.gemspec``
    and ``*.cabal`` fall back to it when their content has no name.
    """
    parser = _PARSERS.get(_kind(file_name))
    name = parser(text) if parser is not None and text is not None else None
    return name or _stem(file_name)


def _priority(file_name: str) -> int:
    kind = _kind(file_name)
    return _NAME_PRIORITY.index(kind) if kind in _NAME_PRIORITY else len(_NAME_PRIORITY)


def project_name(directory: str, markers: Iterable[str], read: Callable[[str], str | None] = read_text) -> str | None:
    """The name declared by the most specific manifest among ``markers`` in ``directory``, or ``None``."""
    for marker in sorted((m for m in markers if is_marker(m)), key=lambda m: (_priority(m), m)):
        needs_text = _kind(marker) in _PARSERS
        name = name_from_manifest(marker, read(os.path.join(directory, marker)) if needs_text else None)
        if name:
            return name
    return None


def _normalise_member(pattern: str) -> str | None:
    pattern = pattern.strip().replace("\\", "/")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.rstrip("/")
    if not pattern or pattern == "." or pattern.startswith(("/", "../")) or pattern == "..":
        return None
    return pattern


@dataclass(frozen=True)
class MemberPatterns:
    """Which directories below a workspace root are its members (globs relative to the root)."""

    include: tuple[str, ...]
    """Member globs (``packages/*``, ``crates/**``, literal paths)."""
    exclude: tuple[str, ...] = ()
    """Globs removed from the members (Cargo/uv ``exclude``, npm/pnpm ``!pattern``)."""

    @classmethod
    def of(cls, patterns: Iterable[str], exclude: Iterable[str] = ()) -> MemberPatterns:
        """Normalised patterns: ``./`` and trailing ``/`` dropped, ``!x`` moved to the excludes."""
        included: list[str] = []
        excluded: list[str] = []
        for raw in patterns:
            target = excluded if raw.strip().startswith("!") else included
            normal = _normalise_member(raw.strip().removeprefix("!"))
            if normal is not None:
                target.append(normal)
        for raw in exclude:
            normal = _normalise_member(raw)
            if normal is not None:
                excluded.append(normal)
        return cls(tuple(included), tuple(excluded))

    def __or__(self, other: MemberPatterns) -> MemberPatterns:
        """Members of either (a folder with several workspace manifests)."""
        return MemberPatterns(self.include + other.include, self.exclude + other.exclude)

    def matches(self, relative: str) -> bool:
        """Whether the ``/``-separated path relative to the root is a member.

        ``*`` and ``?`` stay within one path component (and match a leading dot), ``**`` spans any number of
        components, ``[…]`` is a character class; there is no brace expansion. Matching takes linear time.
        """
        included, excluded = self._compiled
        return included.matches(relative) and not excluded.matches(relative)

    @property
    def rejected(self) -> tuple[str, ...]:
        """Patterns that are not used: not valid globs for the matcher, or beyond :data:`MAX_PATTERNS`."""
        return tuple(self._compiled[0].rejected + self._compiled[1].rejected)

    @cached_property
    def _compiled(self) -> tuple[_Matcher, _Matcher]:
        included = _Matcher(self.include, MAX_PATTERNS)
        return included, _Matcher(self.exclude, MAX_PATTERNS - len(self.include))


_GLOB_CHARACTERS = frozenset("*?[\\")
"""What makes a member pattern more than the one path it spells (with the flags :class:`_Matcher` gives wcmatch)."""


def _literal(pattern: str) -> bool:
    """Whether ``pattern`` matches exactly the one normalised path spelled the same (no ``.``, ``..`` or empty
    component, which a matcher might read otherwise)."""
    if not _GLOB_CHARACTERS.isdisjoint(pattern):
        return False
    parts = pattern.split("/")
    return "" not in parts and "." not in parts and ".." not in parts


def _glob_flags() -> int:
    from wcmatch import glob

    return glob.GLOBSTAR | glob.DOTGLOB | glob.FORCEUNIX


def _compiles(pattern: str) -> bool:
    from wcmatch import glob

    try:
        glob.compile(pattern, flags=_glob_flags())
    except Exception:  # a hostile pattern may break the matcher in any way; it only loses that one
        return False
    return True


class _Matcher:
    """Member patterns, the literal ones compared as strings and the rest compiled by wcmatch (imported only then).

    Patterns beyond ``budget``, and globs wcmatch cannot compile, are rejected: each costs only itself."""

    def __init__(self, patterns: Iterable[str], budget: int) -> None:
        literal: set[str] = set()
        globs: list[str] = []
        self.rejected: list[str] = []
        for pattern in patterns:
            if budget <= 0:
                self.rejected.append(pattern)
                continue
            budget -= 1
            if _literal(pattern):
                literal.add(pattern)
            elif _compiles(pattern):
                globs.append(pattern)
            else:
                self.rejected.append(pattern)
        self._literal = frozenset(literal)
        self._glob: glob.WcMatcher[str] | None = None
        if globs:
            from wcmatch import glob

            self._glob = glob.compile(globs, flags=_glob_flags())

    def matches(self, relative: str) -> bool:
        return relative in self._literal or (self._glob is not None and self._glob.match(relative))


MAX_PATTERNS = 1000
"""Member patterns used per workspace root at most (includes and excludes together)."""


def _strings(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [item for item in cast(list[Any], value) if isinstance(item, str)]


def npm_members(text: str) -> MemberPatterns | None:
    """``workspaces`` of a package.json: a list of globs or ``{"packages": [...]}``."""
    workspaces = _lookup(_json(text), "workspaces")
    patterns = _strings(workspaces) or _strings(_lookup(workspaces, "packages"))
    return MemberPatterns.of(patterns) if patterns else None


def _yaml_scalar(raw: str) -> str:
    raw = raw.strip()
    if raw[:1] in ("'", '"'):
        close = raw.find(raw[0], 1)
        return raw[1:close] if close > 0 else raw[1:]
    return raw.split(" #", 1)[0].strip()


def pnpm_members(text: str) -> MemberPatterns | None:
    """The ``packages:`` list of a pnpm-workspace.yaml (block list or ``[a, b]`` flow list)."""
    patterns: list[str] = []
    in_list = False
    for line in text.splitlines():
        if not in_list:
            key = _YAML_KEY.match(line)
            if key is None:
                continue
            inline = key.group(1).split(" #", 1)[0].strip()
            if inline.startswith("[") and inline.endswith("]"):
                patterns.extend(_yaml_scalar(p) for p in inline[1:-1].split(",") if p.strip())
                break
            in_list = True
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        item = _YAML_ITEM.match(line)
        if item is None:
            break
        patterns.append(_yaml_scalar(item.group(1)))
    patterns = [p for p in patterns if p]
    return MemberPatterns.of(patterns) if patterns else None


def _toml_members(text: str, *keys: str) -> MemberPatterns | None:
    table = _lookup(_toml(text), *keys)
    members = _strings(_lookup(table, "members"))
    return MemberPatterns.of(members, _strings(_lookup(table, "exclude"))) if members else None


def cargo_members(text: str) -> MemberPatterns | None:
    """``[workspace] members`` / ``exclude`` of a Cargo.toml."""
    return _toml_members(text, "workspace")


def uv_members(text: str) -> MemberPatterns | None:
    """``[tool.uv.workspace] members`` / ``exclude`` of a pyproject.toml."""
    return _toml_members(text, "tool", "uv", "workspace")


def _go_path(token: str) -> str:
    token = token.strip()
    if len(token) >= 2 and token[0] == token[-1] and token[0] in '"`':
        token = token[1:-1]
    return re.sub(r"([*?\[])", r"[\1]", token)


def go_work_members(text: str) -> MemberPatterns | None:
    """The ``use`` directives of a go.work (``use ./x`` and ``use ( … )`` blocks), as literal paths."""
    paths: list[str] = []
    in_block = False
    for line in _GO_COMMENT.sub("", text).splitlines():
        words = line.strip()
        if in_block:
            if words.startswith(")"):
                in_block = False
            elif words:
                paths.append(_go_path(words))
        elif words.startswith("use") and words[3:4] in (" ", "\t", "("):
            rest = words[3:].strip()
            if rest.startswith("("):
                inner = rest[1:].strip()
                if inner.endswith(")"):
                    paths.extend(_go_path(p) for p in inner[:-1].split())
                else:
                    in_block = True
                    if inner:
                        paths.append(_go_path(inner))
            elif rest:
                paths.append(_go_path(rest))
    return MemberPatterns.of(paths) if paths else None


_MEMBER_PARSERS: Mapping[str, Callable[[str], MemberPatterns | None]] = {
    "package.json": npm_members,
    "pnpm-workspace.yaml": pnpm_members,
    "Cargo.toml": cargo_members,
    "pyproject.toml": uv_members,
    "go.work": go_work_members,
}


def members_from_manifest(file_name: str, text: str) -> MemberPatterns | None:
    """The member patterns a workspace manifest declares, or ``None`` (also for non-workspace files)."""
    parser = _MEMBER_PARSERS.get(file_name)
    return parser(text) if parser is not None else None


def workspace_members(
    directory: str, markers: Iterable[str], read: Callable[[str], str | None] = read_text
) -> MemberPatterns | None:
    """The union of the member patterns of every workspace manifest among ``markers``, or ``None``."""
    found: MemberPatterns | None = None
    for marker in sorted(set(markers) & WORKSPACE_MANIFESTS):
        text = read(os.path.join(directory, marker))
        patterns = members_from_manifest(marker, text) if text is not None else None
        if patterns is not None:
            found = patterns if found is None else found | patterns
    return found
