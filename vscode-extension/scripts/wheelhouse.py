"""Which wheels a platform .vsix is made of, shared by ``bundle_python.py`` (which lays them out) and
``check_vsix.py`` (which checks what was laid out).

A platform .vsix carries the sidecar and every runtime dependency installed (``pip install --target``) for every
supported CPython on the one platform of the .vsix, so the right wheel of each is needed for each of them. pip
cannot tell which at build time: ``pip download --platform`` evaluates environment markers (``sys_platform ==
'win32'``, ``python_version < '3.13'``) against the interpreter that runs it. So the closure is computed here, with
each target's own marker environment and wheel tags, from the wheels' metadata.
"""

from __future__ import annotations

import re
import zipfile
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.tags import Tag, compatible_tags, cpython_tags, mac_platforms
from packaging.utils import NormalizedName, canonicalize_name, parse_wheel_filename
from packaging.version import Version

#: The CPython versions every platform .vsix carries wheels for.
PYTHONS: tuple[tuple[int, int], ...] = ((3, 11), (3, 12), (3, 13), (3, 14))

#: The oldest glibc VS Code (and its remote server) runs on.
GLIBC = (2, 28)
#: The oldest macOS the macOS wheels may need.
MACOS = (11, 0)


def _manylinux(arch: str) -> tuple[str, ...]:
    """Every manylinux tag a glibc-``GLIBC`` system accepts, most specific first (pip expands none of them)."""
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    oldest = 17 if arch == "aarch64" else 5
    found: list[str] = []
    for minor in range(GLIBC[1], oldest - 1, -1):
        found.append(f"manylinux_2_{minor}_{arch}")
        if minor in legacy and (minor != 5 or arch == "x86_64"):
            found.append(f"{legacy[minor]}_{arch}")
    return tuple(found)


@dataclass(frozen=True)
class Target:
    """A ``vsce package --target``: its wheel platform tags (most preferred first) and marker values."""

    name: str
    platforms: tuple[str, ...]
    os_name: str
    sys_platform: str
    platform_system: str
    platform_machine: str

    def tags(self, python: tuple[int, int]) -> list[Tag]:
        """The wheel tags CPython ``python`` accepts on this target, most preferred first."""
        interpreter = f"cp{python[0]}{python[1]}"
        return [
            *cpython_tags(python, [interpreter], self.platforms),
            *compatible_tags(python, interpreter, self.platforms),
        ]

    def markers(self, python: tuple[int, int]) -> dict[str, str]:
        """The PEP 508 marker environment of CPython ``python`` on this target (``x.y.0``)."""
        version = f"{python[0]}.{python[1]}"
        return {
            "implementation_name": "cpython",
            "implementation_version": f"{version}.0",
            "os_name": self.os_name,
            "platform_machine": self.platform_machine,
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": self.platform_system,
            "platform_version": "",
            "python_full_version": f"{version}.0",
            "python_version": version,
            "sys_platform": self.sys_platform,
        }


TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target("linux-x64", _manylinux("x86_64"), "posix", "linux", "Linux", "x86_64"),
        Target("linux-arm64", _manylinux("aarch64"), "posix", "linux", "Linux", "aarch64"),
        Target("darwin-x64", tuple(mac_platforms(MACOS, "x86_64")), "posix", "darwin", "Darwin", "x86_64"),
        Target("darwin-arm64", tuple(mac_platforms(MACOS, "arm64")), "posix", "darwin", "Darwin", "arm64"),
        Target("win32-x64", ("win_amd64",), "nt", "win32", "Windows", "AMD64"),
    )
}


def python_label(python: tuple[int, int]) -> str:
    return f"{python[0]}.{python[1]}"


@dataclass(frozen=True)
class Wheel:
    """A wheel file, known by its name."""

    filename: str
    name: NormalizedName
    version: Version
    tags: frozenset[Tag]

    @classmethod
    def parse(cls, filename: str) -> Wheel:
        name, version, _build, tags = parse_wheel_filename(filename)
        return cls(filename, name, version, tags)

    @property
    def pure(self) -> bool:
        return all(tag.abi == "none" and tag.platform == "any" for tag in self.tags)


def metadata_field(text: str, field: str) -> list[str]:
    """The values of header ``field`` (``Requires-Dist``, ``Name``…) of a METADATA file's text."""
    headers = text.split("\n\n", 1)[0]
    return [line.split(":", 1)[1].strip() for line in headers.splitlines() if line.startswith(f"{field}:")]


def wheel_requires(wheel: zipfile.ZipFile) -> list[str]:
    """The ``Requires-Dist`` lines of an open wheel's METADATA."""
    metadata = [n for n in wheel.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
    if len(metadata) != 1:
        raise ValueError(f"{wheel.filename}: expected one .dist-info/METADATA, found {len(metadata)}")
    return metadata_field(wheel.read(metadata[0]).decode("utf-8"), "Requires-Dist")


def folder_requires(folder: Path) -> Callable[[Wheel], list[str]]:
    """Read a wheel's requirements from ``folder/<filename>``."""

    def read(wheel: Wheel) -> list[str]:
        with zipfile.ZipFile(folder / wheel.filename) as opened:
            return wheel_requires(opened)

    return read


def read_pins(text: str) -> dict[NormalizedName, Version]:
    """``name==version`` lines of a constraints file."""
    pins: dict[NormalizedName, Version] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


@dataclass(frozen=True)
class Missing:
    """A requirement no available wheel satisfies."""

    name: NormalizedName
    #: What the requirement itself asks for (``>=3.4``), without the pin.
    specifier: str
    pin: Version | None
    why: str

    @property
    def wanted(self) -> str:
        """The requirement as ``pip download`` takes it."""
        return f"{self.name}=={self.pin}" if self.pin is not None else f"{self.name}{self.specifier}"


@dataclass
class Closure:
    """What CPython ``python`` on ``target`` installs: a chosen wheel per project, and what no wheel satisfies."""

    chosen: dict[NormalizedName, Wheel] = field(default_factory=dict)
    missing: list[Missing] = field(default_factory=list)


def closure(
    roots: Iterable[str],
    pins: Mapping[NormalizedName, Version],
    target: Target,
    python: tuple[int, int],
    available: Iterable[Wheel],
    requires: Callable[[Wheel], list[str]],
) -> Closure:
    """Resolve ``roots`` (requirement strings) and their runtime dependencies to ``available`` wheels.

    A pinned project must have its pinned version; an unpinned one (a dependency of another platform only,
    such as pywin32) gets its newest available version. The first requirement met for a project chooses its
    wheel; a later one it does not satisfy is reported as missing.
    """
    tags = target.tags(python)
    rank = {tag: index for index, tag in enumerate(tags)}
    environment = target.markers(python)
    by_name: dict[NormalizedName, list[Wheel]] = {}
    for wheel in available:
        if wheel.tags & rank.keys():
            by_name.setdefault(wheel.name, []).append(wheel)
    result = Closure()
    extras_done: dict[NormalizedName, set[str]] = {}
    queue: deque[tuple[Requirement, frozenset[str]]] = deque((Requirement(root), frozenset()) for root in roots)

    def wanted(requirement: Requirement, extras: frozenset[str]) -> bool:
        marker = requirement.marker
        return marker is None or any(marker.evaluate({**environment, "extra": e}) for e in {"", *extras})

    def follow(wheel: Wheel, extras: frozenset[str]) -> None:
        queue.extend((Requirement(line), extras) for line in requires(wheel))

    while queue:
        requirement, parent_extras = queue.popleft()
        if not wanted(requirement, parent_extras):
            continue
        name = canonicalize_name(requirement.name)
        extras = frozenset(requirement.extras)
        pin = pins.get(name)
        specifier = str(requirement.specifier)
        chosen = result.chosen.get(name)
        if chosen is not None:
            if not requirement.specifier.contains(chosen.version, prereleases=True):
                why = f"{chosen.filename} does not satisfy {requirement}"
                result.missing.append(Missing(name, specifier, pin, why))
            new = extras - extras_done[name]
            if new:
                extras_done[name] |= new
                follow(chosen, frozenset(new))
            continue
        candidates = [
            wheel
            for wheel in by_name.get(name, [])
            if (pin is None or wheel.version == pin) and requirement.specifier.contains(wheel.version, prereleases=True)
        ]
        if not candidates:
            missing = Missing(name, specifier, pin, "")
            why = f"no wheel of {missing.wanted} for CPython {python_label(python)} on {target.name}"
            result.missing.append(Missing(name, specifier, pin, why))
            continue
        best = max(candidates, key=lambda w: (w.version, -min(rank.get(t, len(rank)) for t in w.tags)))
        result.chosen[name] = best
        extras_done[name] = set(extras)
        follow(best, extras)
    return result
