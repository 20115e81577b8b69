"""Check built ``host-bridge-*.vsix`` files: each holds the bundle and the sidecar, and nothing it should not.

Usage: ``python check_vsix.py FILE.vsix…``. Prints each package's size, or one line per problem (exit 1).

A platform package (``vsce package --target linux-x64``) must carry a wheel of every runtime dependency for
every supported CPython on its platform (resolved with that platform's markers and wheel tags, see
wheelhouse.py), and no wheel that no supported CPython of its platform would install. The universal package
carries only the sidecar and pip: it installs the dependencies from the package index at first start.
"""

from __future__ import annotations

import functools
import io
import json
import re
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import InvalidWheelFilename
from wheelhouse import PYTHONS, TARGETS, Wheel, closure, python_label, read_pins, wheel_requires

UNIVERSAL = "universal"
REQUIRED = (
    "extension/package.json",
    "extension/readme.md",
    "extension/dist/extension.js",
    "extension/python/constraints.txt",
    "extension/python/bundle.json",
)
#: Every file a package may hold; anything else (node_modules, sources, tests, a .venv, source maps) is a problem.
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
        r"extension/python/host_bridge-[^/]+-py3-none-any\.whl",
        r"extension/python/constraints\.txt",
        r"extension/python/bundle\.json",
        r"extension/python/wheels/[^/]+\.whl",
    )
)
WHEEL_MODULES = (
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
    wheels: int = 0
    size: int = 0


def _manifest_target(vsix: zipfile.ZipFile) -> str:
    """The package's ``TargetPlatform`` (vsce ``--target``), or universal."""
    try:
        manifest = vsix.read("extension.vsixmanifest").decode("utf-8")
    except KeyError:
        return UNIVERSAL
    found = re.search(r'TargetPlatform="([^"]+)"', manifest)
    return found.group(1) if found else UNIVERSAL


def _check_sidecar(vsix: zipfile.ZipFile, names: list[str], found: list[str]) -> list[str] | None:
    """Check the sidecar wheel; return its requirements (``Requires-Dist``) when there is exactly one."""
    wheels = [n for n in names if re.fullmatch(r"extension/python/host_bridge-[^/]+\.whl", n)]
    if len(wheels) != 1:
        found.append(f"expected one host_bridge wheel under extension/python/, found {len(wheels)}")
        return None
    with zipfile.ZipFile(io.BytesIO(vsix.read(wheels[0]))) as wheel:
        inside = wheel.namelist()
        found += [f"the sidecar wheel lacks {module}" for module in WHEEL_MODULES if module not in inside]
        strays = [n for n in inside if not re.match(r"host_bridge(/|-[^/]+\.dist-info/)", n)]
        found += [f"the sidecar wheel must not contain {name}" for name in strays]
        return wheel_requires(wheel)


def _check_wheels(
    vsix: zipfile.ZipFile,
    target: str,
    bundle: dict[str, object],
    roots: list[str],
    names: list[str],
    found: list[str],
) -> int:
    """Check ``python/wheels`` against the target; return how many wheels it holds."""
    files: list[str] = []
    for name in sorted(n for n in names if re.fullmatch(re.escape(WHEELS) + r"[^/]+\.whl", n)):
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
    others = [Wheel.parse(f) for f in files if f != pip]
    pythons = bundle.get("pythons")
    if target == UNIVERSAL:
        if pythons != []:
            found.append(f"the universal package's bundle.json lists Pythons {pythons!r}, expected none")
        found += [f"the universal package must not contain wheels/{wheel.filename}" for wheel in others]
        return len(files)
    expected = [python_label(python) for python in PYTHONS]
    if pythons != expected:
        found.append(f"bundle.json lists Pythons {pythons!r}, expected {expected!r}")
    platform = TARGETS.get(target)
    if platform is None:
        found.append(f"unknown target platform {target!r}")
        return len(files)
    pins = read_pins(vsix.read("extension/python/constraints.txt").decode("utf-8"))
    requires = functools.partial(_nested_requires, vsix)
    used: set[str] = set()
    for python in PYTHONS:
        result = closure(roots, pins, platform, python, others, requires)
        found += [missing.why for missing in result.missing]
        used.update(wheel.filename for wheel in result.chosen.values())
    every_tag = {tag for python in PYTHONS for tag in platform.tags(python)}
    for wheel in others:
        if not wheel.tags & every_tag:
            found.append(f"wheels/{wheel.filename} is not for {target} (CPython {expected[0]}–{expected[-1]})")
        elif wheel.filename not in used:
            found.append(f"wheels/{wheel.filename} is installed by no supported CPython on {target}")
    return len(files)


def _nested_requires(vsix: zipfile.ZipFile, wheel: Wheel) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(vsix.read(WHEELS + wheel.filename))) as opened:
        return wheel_requires(opened)


def check(path: str) -> Report:
    """Everything wrong with the package at ``path``, and what it holds."""
    report = Report(problems=[], size=Path(path).stat().st_size)
    found = report.problems
    with zipfile.ZipFile(path) as vsix:
        names = [n for n in vsix.namelist() if not n.endswith("/")]
        found += [f"missing {name}" for name in REQUIRED if name not in names]
        found += [f"must not contain {name}" for name in names if not any(p.fullmatch(name) for p in ALLOWED)]
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
        roots = _check_sidecar(vsix, names, found)
        report.target = _manifest_target(vsix)
        if "extension/python/bundle.json" in names and "extension/python/constraints.txt" in names:
            bundle = json.loads(vsix.read("extension/python/bundle.json"))
            if bundle.get("target") != report.target:
                found.append(f"bundle.json is for {bundle.get('target')!r} but the package for {report.target!r}")
            elif roots is not None:
                report.wheels = _check_wheels(vsix, report.target, bundle, roots, names, found)
    return report


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
            holds = (
                f"{report.wheels} wheels for CPython {python_label(PYTHONS[0])}–{python_label(PYTHONS[-1])}"
                if report.target != UNIVERSAL
                else "dependencies from the package index at first start"
            )
            print(f"{path}: ok, {report.target}, {report.size / 1e6:.1f} MB, {holds}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
