"""Check built ``host-bridge-*.vsix`` files: each holds the bundle and the sidecar, and nothing it should not.

Usage: ``python check_vsix.py FILE.vsix…``. Prints each package's size, or one line per problem (exit 1).

A platform package (``vsce package --target linux-x64``) carries the sidecar and its dependencies laid out ready
to import (bundle_python.py): ``python/lib/common`` and ``python/lib/cp3XY`` for every supported CPython, and the
launcher ``python/run_sidecar.py``. For each CPython, what it imports (``common`` and its own folder) must hold a
distribution of every runtime dependency, resolved with that platform's markers and wheel tags (wheelhouse.py),
each file as its ``RECORD`` says (size and hash) and every file owned by one; nothing may be there that no
supported CPython imports, nor scripts or build paths (``bin/``, ``direct_url.json``). The only compiled modules
are the ``__pycache__`` of the one CPython ``bundle.json`` says the libraries are compiled for: ``checked-hash``
``.pyc`` files, each next to its module (and, when this script runs on that CPython, compiled from it). The
universal package carries only the sidecar's wheel, its pins and pip: it installs the dependencies from the
package index at first start.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import io
import json
import re
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.tags import parse_tag
from packaging.utils import InvalidWheelFilename, canonicalize_name
from packaging.version import InvalidVersion, Version
from wheelhouse import PYTHONS, TARGETS, Target, Wheel, closure, metadata_field, python_label

UNIVERSAL = "universal"
HERE = Path(__file__).resolve().parent
LAUNCHER = "run_sidecar.py"
PYTHON = "extension/python/"
LIB = PYTHON + "lib/"
COMMON = "common"
REQUIRED = (
    "extension/package.json",
    "extension/readme.md",
    "extension/dist/extension.js",
    PYTHON + "bundle.json",
)
#: Every file any package may hold; anything else (node_modules, sources, tests, a .venv, source maps) is a problem.
ALLOWED = tuple(
    re.compile(pattern)
    for pattern in (
        r"extension\.vsixmanifest",
        r"\[Content_Types\]\.xml",
        r"extension/package\.json",
        r"extension/readme\.md",
        r"extension/changelog\.md",
        r"extension/LICENSE(\.txt)?",
        r"extension/dist/extension\.js",
        r"extension/python/bundle\.json",
    )
)
#: What only the universal package holds.
UNIVERSAL_ALLOWED = tuple(
    re.compile(pattern)
    for pattern in (
        r"extension/python/host_bridge-[^/]+-py3-none-any\.whl",
        r"extension/python/constraints\.txt",
        r"extension/python/wheels/[^/]+\.whl",
    )
)
#: What only a platform package holds: the launcher and the libraries, without compiled modules, scripts or the
#: build machine's paths.
PLATFORM_ALLOWED = tuple(
    re.compile(pattern)
    for pattern in (
        r"extension/python/run_sidecar\.py",
        r"extension/python/lib/(common|cp3\d+)/(?!bin/)(?!.*(/__pycache__/|\.pyc$|\.dist-info/direct_url\.json$)).+",
        r"extension/python/lib/(common|cp3\d+)/(?!bin/)(.+/)?__pycache__/[^/]+\.cpython-3\d+\.pyc",
    )
)
#: ``…/__pycache__/name.cpython-312.pyc`` → the module's folder, its name and the CPython's tag.
PYC = re.compile(r"(?P<folder>(.+/)?)__pycache__/(?P<name>[^/]+)\.(?P<tag>cpython-3\d+)\.pyc")
#: The flags of a ``checked-hash`` ``.pyc`` (PEP 552): hash-based, checked against the source.
CHECKED_HASH = 0b11
SIDECAR_MODULES = (
    "host_bridge/__main__.py",
    "host_bridge/hosts/cli.py",
    "host_bridge/hosts/lsp/server.py",
    "host_bridge/hub/connection.py",
    "host_bridge/consent/store.py",
)
WHEELS = "extension/python/wheels/"


@dataclass
class Report:
    """What was found in one package."""

    problems: list[str]
    target: str = UNIVERSAL
    size: int = 0
    #: What it holds, for the summary line.
    holds: str = ""


def _manifest_target(vsix: zipfile.ZipFile) -> str:
    """The package's ``TargetPlatform`` (vsce ``--target``), or universal."""
    try:
        manifest = vsix.read("extension.vsixmanifest").decode("utf-8")
    except KeyError:
        return UNIVERSAL
    found = re.search(r'TargetPlatform="([^"]+)"', manifest)
    return found.group(1) if found else UNIVERSAL


def _check_universal(vsix: zipfile.ZipFile, bundle: dict[str, object], names: list[str], found: list[str]) -> str:
    """The sidecar's wheel, its pins and pip's wheel; nothing else."""
    wheels = [n for n in names if re.fullmatch(r"extension/python/host_bridge-[^/]+\.whl", n)]
    if len(wheels) != 1:
        found.append(f"expected one host_bridge wheel under extension/python/, found {len(wheels)}")
    else:
        with zipfile.ZipFile(io.BytesIO(vsix.read(wheels[0]))) as wheel:
            inside = wheel.namelist()
            found += [f"the sidecar wheel lacks {module}" for module in SIDECAR_MODULES if module not in inside]
            strays = [n for n in inside if not re.match(r"host_bridge(/|-[^/]+\.dist-info/)", n)]
            found += [f"the sidecar wheel must not contain {name}" for name in strays]
    if PYTHON + "constraints.txt" not in names:
        found.append("missing extension/python/constraints.txt")
    files: list[str] = []
    for name in sorted(n for n in names if n.startswith(WHEELS)):
        try:
            Wheel.parse(name[len(WHEELS) :])
            files.append(name[len(WHEELS) :])
        except InvalidWheelFilename as error:
            found.append(f"{name}: {error}")
    pip = bundle.get("pip")
    if not isinstance(pip, str) or pip not in files:
        found.append(f"bundle.json names pip wheel {pip!r}, which is not in python/wheels")
    elif not Wheel.parse(pip).pure or Wheel.parse(pip).name != "pip":
        found.append(f"{pip} is not a pure pip wheel")
    found += [f"the universal package must not contain wheels/{name}" for name in files if name != pip]
    if bundle.get("pythons") != []:
        found.append(f"the universal package's bundle.json lists Pythons {bundle.get('pythons')!r}, expected none")
    return "dependencies from the package index at first start"


@dataclass
class Distribution:
    """One ``.dist-info`` folder under ``lib/<folder>``."""

    folder: str
    info: str
    wheel: Wheel
    requires: list[str]
    #: Its ``RECORD``: path → (urlsafe base64 sha256 without padding, size); the RECORD itself has neither.
    record: dict[str, tuple[str, int] | None] = field(default_factory=dict)


def _distribution(vsix: zipfile.ZipFile, folder: str, info: str, found: list[str]) -> Distribution | None:
    base = f"{LIB}{folder}/{info}/"
    try:
        metadata = vsix.read(base + "METADATA").decode("utf-8")
        tags_text = vsix.read(base + "WHEEL").decode("utf-8")
        record_text = vsix.read(base + "RECORD").decode("utf-8")
    except KeyError as error:
        found.append(f"lib/{folder}/{info} lacks {error.args[0].rsplit('/', 1)[-1]}")
        return None
    name = next(iter(metadata_field(metadata, "Name")), "")
    version = next(iter(metadata_field(metadata, "Version")), "")
    tags = frozenset(tag for line in metadata_field(tags_text, "Tag") for tag in parse_tag(line))
    try:
        wheel = Wheel(f"lib/{folder}/{info}", canonicalize_name(name), Version(version), tags)
    except InvalidVersion:
        found.append(f"lib/{folder}/{info}: METADATA has no valid Version ({version!r})")
        return None
    if not name or not tags:
        found.append(f"lib/{folder}/{info}: METADATA names no Name or WHEEL no Tag")
        return None
    distribution = Distribution(folder, info, wheel, metadata_field(metadata, "Requires-Dist"))
    for line in record_text.splitlines():
        if not line:
            continue
        path, digest, size = line.rsplit(",", 2)
        if digest:
            distribution.record[path] = (digest.removeprefix("sha256="), int(size))
        else:
            distribution.record[path] = None
    return distribution


def _digest(vsix: zipfile.ZipFile, name: str) -> tuple[str, int]:
    data = vsix.read(name)
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode(), len(data)


def _check_pyc(vsix: zipfile.ZipFile, bundle: dict[str, object], name: str, found: list[str]) -> None:
    """A ``.pyc`` under ``lib/`` is for the CPython the libraries are compiled for, next to its module, checked
    against that module's hash (so unpacking, which gives every file a new time, does not make it stale), and when
    this script runs on that CPython, compiled from that module as it is in the package."""
    match = PYC.fullmatch(name)
    assert match is not None
    compiled = bundle.get("compiled")
    tags = [f"cpython-{version.replace('.', '')}" for version in compiled] if isinstance(compiled, list) else []
    shown = name[len(PYTHON) :]
    if match["tag"] not in tags:
        found.append(f"{shown}: bundle.json says the libraries are compiled for CPython {compiled!r}, not this one")
        return
    source = f"{match['folder']}{match['name']}.py"
    try:
        text = vsix.read(source)
    except KeyError:
        found.append(f"{shown} has no module {source[len(PYTHON) :]}")
        return
    data = vsix.read(name)
    flags = int.from_bytes(data[4:8], "little")
    if flags != CHECKED_HASH:
        found.append(f"{shown} is not a checked-hash .pyc (flags {flags}): unpacking would make it stale")
    elif sys.implementation.cache_tag == match["tag"] and (
        data[:4] != importlib.util.MAGIC_NUMBER or data[8:16] != importlib.util.source_hash(text)
    ):
        found.append(f"{shown} was not compiled from {source[len(PYTHON) :]} as the package holds it")


def _check_laid_out(
    vsix: zipfile.ZipFile, target_name: str, bundle: dict[str, object], names: list[str], found: list[str]
) -> str:
    """The launcher and, for every supported CPython, ``lib/common`` and ``lib/cp3XY``: complete, as recorded, and
    holding nothing no supported CPython imports."""
    target: Target | None = TARGETS.get(target_name)
    if target is None:
        found.append(f"unknown target platform {target_name!r}")
        return ""
    expected = [python_label(python) for python in PYTHONS]
    if bundle.get("pythons") != expected:
        found.append(f"bundle.json lists Pythons {bundle.get('pythons')!r}, expected {expected!r}")
    if bundle.get("launcher") != LAUNCHER:
        found.append(f"bundle.json names launcher {bundle.get('launcher')!r}, expected {LAUNCHER!r}")
    if PYTHON + LAUNCHER not in names:
        found.append(f"missing {PYTHON}{LAUNCHER}")
    elif vsix.read(PYTHON + LAUNCHER) != (HERE / LAUNCHER).read_bytes():
        found.append(f"{PYTHON}{LAUNCHER} is not scripts/{LAUNCHER}")
    tags = {f"cp{python[0]}{python[1]}": python for python in PYTHONS}
    files: dict[str, list[str]] = {}
    for name in names:
        if name.startswith(LIB):
            folder, _, rest = name[len(LIB) :].partition("/")
            if PYC.fullmatch(rest):
                _check_pyc(vsix, bundle, name, found)
            else:
                files.setdefault(folder, []).append(rest)
    # A Python whose every library is shared has no folder of its own; what each Python lacks is named below.
    found += [f"lib/{folder}/ is for no supported CPython" for folder in sorted(files.keys() - {COMMON, *tags})]
    distributions: dict[str, list[Distribution]] = {}
    for folder in (COMMON, *tags):
        infos = sorted({rest.split("/", 1)[0] for rest in files.get(folder, []) if ".dist-info/" in rest})
        for info in infos:
            distribution = _distribution(vsix, folder, info, found)
            if distribution is not None:
                distributions.setdefault(folder, []).append(distribution)
    digest = functools.lru_cache(maxsize=None)(functools.partial(_digest, vsix))
    chosen_by: dict[str, set[str]] = {}
    for tag, python in tags.items():
        label = f"CPython {python_label(python)}"
        # What this Python imports: common and its own folder, which must not both hold a file.
        view: dict[str, str] = {}
        for folder in (COMMON, tag):
            for rest in files.get(folder, []):
                if rest in view:
                    found.append(f"lib/{COMMON}/{rest} and lib/{tag}/{rest} both exist")
                view[rest] = f"{LIB}{folder}/{rest}"
        present = [d for folder in (COMMON, tag) for d in distributions.get(folder, [])]
        owned: set[str] = set()
        for distribution in present:
            for path, expected_digest in distribution.record.items():
                owned.add(path)
                if path not in view:
                    found.append(f"{label}: {distribution.wheel.filename} records {path}, which is missing")
                elif expected_digest is not None and digest(view[path]) != expected_digest:
                    found.append(f"{label}: {view[path][len(PYTHON) :]} differs from its RECORD")
        strays = sorted(view.keys() - owned)
        found += [f"{label}: {view[path][len(PYTHON) :]} belongs to no distribution" for path in strays]
        found += [f"{label}: the sidecar lacks {module}" for module in SIDECAR_MODULES if module not in view]
        by_name = {d.wheel.name: d for d in present}
        sidecar = by_name.get(canonicalize_name("host-bridge"))
        if sidecar is None:
            found.append(f"{label}: no host_bridge distribution")
            continue
        requires = {d.wheel.filename: d.requires for d in present}
        available = [d.wheel for d in present if d is not sidecar]
        result = closure(sidecar.requires, {}, target, python, available, lambda w, r=requires: r[w.filename])
        found += [f"{label}: {missing.why}" for missing in result.missing]
        for wheel in [sidecar.wheel, *result.chosen.values()]:
            chosen_by.setdefault(wheel.filename, set()).add(tag)
    for folder, present in distributions.items():
        for distribution in present:
            users = chosen_by.get(distribution.wheel.filename, set())
            needed = set(tags) if folder == COMMON else {folder}
            if users != needed:
                who = ", ".join(f"CPython {python_label(tags[t])}" for t in sorted(users)) or "no supported CPython"
                wanted = "every supported CPython" if folder == COMMON else f"CPython {python_label(tags[folder])}"
                found.append(f"{distribution.wheel.filename} is imported by {who}, not by {wanted}")
    shared = len(distributions.get(COMMON, []))
    return f"laid out for CPython {expected[0]}–{expected[-1]} ({shared} distributions shared, rest per Python)"


def check(path: str) -> Report:
    """Everything wrong with the package at ``path``, and what it holds."""
    report = Report(problems=[], size=Path(path).stat().st_size)
    found = report.problems
    with zipfile.ZipFile(path) as vsix:
        names = [n for n in vsix.namelist() if not n.endswith("/")]
        report.target = _manifest_target(vsix)
        own = UNIVERSAL_ALLOWED if report.target == UNIVERSAL else PLATFORM_ALLOWED
        found += [f"missing {name}" for name in REQUIRED if name not in names]
        found += [f"must not contain {name}" for name in names if not any(p.fullmatch(name) for p in ALLOWED + own)]
        if "extension/package.json" in names:
            manifest = json.loads(vsix.read("extension/package.json"))
            if manifest.get("main") != "./dist/extension.js":
                found.append(f"package.json main is {manifest.get('main')!r}, expected './dist/extension.js'")
            if manifest.get("extensionKind") != ["workspace"]:
                found.append(f"package.json extensionKind is {manifest.get('extensionKind')!r}, expected ['workspace']")
        if "extension/dist/extension.js" in names:
            bundle_js = vsix.read("extension/dist/extension.js")
            if b"vscode-languageclient" not in bundle_js and b"LanguageClient" not in bundle_js:
                found.append("dist/extension.js does not contain the language client: was it bundled?")
        if PYTHON + "bundle.json" in names:
            bundle = json.loads(vsix.read(PYTHON + "bundle.json"))
            if bundle.get("target") != report.target:
                found.append(f"bundle.json is for {bundle.get('target')!r} but the package for {report.target!r}")
            elif report.target == UNIVERSAL:
                report.holds = _check_universal(vsix, bundle, names, found)
            else:
                report.holds = _check_laid_out(vsix, report.target, bundle, names, found)
    return report


def installed_size(path: str) -> int:
    """Bytes the package's files take once unpacked."""
    with zipfile.ZipFile(path) as vsix:
        return sum(info.file_size for info in vsix.infolist())


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: check_vsix.py FILE.vsix…", file=sys.stderr)
        return 2
    failed = False
    for path in argv:
        report = check(path)
        for problem in report.problems:
            print(f"{path}: {problem}", file=sys.stderr)
        failed = failed or bool(report.problems)
        if not report.problems:
            print(
                f"{path}: ok, {report.target}, {report.size / 1e6:.1f} MB "
                f"({installed_size(path) / 1e6:.1f} MB installed), {report.holds}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
