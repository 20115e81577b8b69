"""Put the sidecar into the extension package's ``python/`` folder, for one ``vsce package --target``.

Usage: ``bundle_python.py --target universal|linux-x64|linux-arm64|darwin-x64|darwin-arm64|win32-x64``.
Run with the project's virtual environment (``.venv/bin/python``).

For a platform target it writes the sidecar and every runtime dependency *laid out ready to import*, for each
CPython 3.11–3.14 on that platform, so that the first start installs nothing:

- ``lib/cp3XY/``: each Python's own ``pip install --target`` of the sidecar's wheel and the wheels that Python
  installs on that platform (``--platform … --python-version … --only-binary=:all: --no-deps``, from the wheel
  cache), without scripts (``bin/``) or ``direct_url.json`` (it names this machine's cache);
- ``lib/common/``: every top-level entry (package, module, ``.dist-info``) that all four installs hold byte for
  byte alike (pure Python, ``abi3`` extensions), once; what is left in ``lib/cp3XY`` is that Python's own;
- ``run_sidecar.py``: the launcher, ``python -I -S run_sidecar.py serve``, which puts ``lib/common`` and
  ``lib/cp3XY`` on ``sys.path``, with nothing else but the standard library (see that file);
- ``__pycache__`` next to the modules of ``lib/common`` and ``lib/cp3XY`` for the CPython that runs this script
  (when it is one of 3.11–3.14): hash-based ``.pyc`` files (``checked-hash``: valid whatever the files' times
  after unpacking), so that a first start with that Python imports without compiling (a second of a first start);
  other Pythons compile on their first start and keep what they compiled next to the modules;
- ``bundle.json``: the target, the Python versions ``lib/`` is complete for, the one it is compiled for, and the
  launcher.

For ``universal`` it writes what the extension installs into a private virtual environment at first start, with
the dependencies from the package index:

- ``host_bridge-*.whl``: the sidecar;
- ``constraints.txt``: every runtime dependency of ``host-bridge`` pinned to the version installed (and tested)
  in this environment, so a user's private environment gets exactly what ``make test`` ran against;
- ``wheels/``: pip's own wheel (the extension builds the private environment with ``venv --without-pip`` and
  this pip);
- ``bundle.json``: the target (no Python versions: nothing is installed without the index) and pip's wheel.

Wheels are downloaded with ``pip download --no-deps --platform … --python-version …`` into a cache kept between
builds (``$HOST_BRIDGE_WHEEL_CACHE``, default ``~/.cache/host-bridge/wheels``; pip's own HTTP cache helps the
first fill). A build whose wheels are all in that cache does not touch the network.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import py_compile
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version
from wheelhouse import PYTHONS, TARGETS, Closure, Target, Wheel, closure, folder_requires, python_label, wheel_requires

HERE = Path(__file__).resolve().parent
EXTENSION = HERE.parent
PROJECT = EXTENSION.parent
OUT = EXTENSION / "python"
UNIVERSAL = "universal"
LAUNCHER = "run_sidecar.py"
COMMON = "common"


def default_cache() -> Path:
    configured = os.environ.get("HOST_BRIDGE_WHEEL_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "host-bridge" / "wheels"


def runtime_closure(root: str) -> dict[str, str]:
    """``{name: version}`` of ``root`` and everything it needs at run time in this environment.

    Extras a requirement asks for (``pyjwt[crypto]``) are followed; ``root``'s own extras are not.
    """
    environment = {k: str(v) for k, v in default_environment().items()}
    pending: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    found: dict[str, str] = {}
    done: dict[str, set[str]] = {}
    while pending:
        name, extras = pending.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in done and extras <= done[key]:
            continue
        done.setdefault(key, set()).update(extras)
        dist = metadata.distribution(name)
        found[key] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is not None and not any(marker.evaluate({**environment, "extra": e}) for e in {"", *extras}):
                continue
            pending.append((requirement.name, frozenset(requirement.extras)))
    return found


class DownloadError(Exception):
    """pip could not download a requirement; the message holds pip's errors."""


def pip_for(action: str, target: Target, python: tuple[int, int]) -> list[str]:
    """``pip <action>`` of wheels only, without dependencies, for CPython ``python`` on ``target`` (not this
    machine's own interpreter and platform)."""
    platforms = [arg for platform in target.platforms for arg in ("--platform", platform)]
    return [
        sys.executable,
        "-m",
        "pip",
        action,
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        python_label(python),
        "--abi",
        python_tag(python),
        *platforms,
    ]


def download(requirements: list[str], target: Target, python: tuple[int, int], cache: Path) -> None:
    """``pip download`` the best wheel of each requirement for ``python`` on ``target`` into ``cache``."""
    command = [*pip_for("download", target, python), "--dest", str(cache), *requirements]
    print(f"  downloading for {target.name}, CPython {python_label(python)}: {' '.join(requirements)}")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        raise DownloadError("\n".join(errors or done.stderr.splitlines()[-10:]))


def failure(target: Target, python: tuple[int, int], why: str) -> SystemExit:
    return SystemExit(f"bundle_python: {target.name}, CPython {python_label(python)}:\n{why}")


def resolve(
    roots: list[str],
    pins: dict[NormalizedName, Version],
    target: Target,
    python: tuple[int, int],
    cache: Path,
) -> Closure:
    """The wheels CPython ``python`` on ``target`` installs for ``roots``, downloading what the cache lacks.

    A pinned version without a wheel for this target (cryptography stopped publishing macOS x86_64 wheels) is
    replaced by the newest version that has one, which is removed from ``pins`` (the caller's dict) and reported.
    """
    # What pip found no wheel for at all, remembered between builds: a re-run does not ask the index again.
    record = cache / "unavailable.json"
    unavailable: set[str] = set(json.loads(record.read_text(encoding="utf-8"))) if record.exists() else set()
    tried: set[str] = set()
    while True:
        available = [Wheel.parse(path.name) for path in cache.glob("*.whl")]
        result = closure(roots, pins, target, python, available, folder_requires(cache))
        if not result.missing:
            return result
        new = {missing.wanted: missing for missing in result.missing if missing.wanted not in tried}
        if not new:
            reasons = "\n".join(f"  {missing.why}" for missing in result.missing)
            raise failure(target, python, reasons)
        tried.update(new)
        key = f"{target.name} cp{python[0]}{python[1]} "
        gone = [missing for missing in new.values() if key + missing.wanted in unavailable]
        fetch = [missing for missing in new.values() if key + missing.wanted not in unavailable]
        try:
            if fetch:
                download(sorted(missing.wanted for missing in fetch), target, python, cache)
        except DownloadError:
            for missing in fetch:
                try:
                    download([missing.wanted], target, python, cache)
                except DownloadError as error:
                    if missing.pin is None:
                        raise failure(target, python, str(error)) from None
                    gone.append(missing)
                    unavailable.add(key + missing.wanted)
                    record.write_text(json.dumps(sorted(unavailable), indent=2) + "\n", encoding="utf-8")
        for missing in gone:
            # The next round takes the newest cached wheel that satisfies the requirement, or downloads it.
            print(
                f"  note: {missing.name} {missing.pin} has no wheel for {target.name}, CPython "
                f"{python_label(python)}: using the newest {missing.name}{missing.specifier} that has one"
            )
            del pins[missing.name]


def python_tag(python: tuple[int, int]) -> str:
    """``cp312``: the folder of ``lib/`` with what only that CPython imports."""
    return f"cp{python[0]}{python[1]}"


def install_target(wheels: list[Path], target: Target, python: tuple[int, int], into: Path) -> None:
    """``pip install --target into`` the given wheels as CPython ``python`` on ``target`` would (no index, no
    dependencies: the wheels are the resolved closure), then drop what does not belong in a package: the console
    scripts (``bin/``) and ``direct_url.json`` (it names this machine's wheel cache), also from each ``RECORD``."""
    command = [
        *pip_for("install", target, python),
        "--no-index",
        "--no-compile",
        "--target",
        str(into),
        *map(str, wheels),
    ]
    subprocess.run(command, check=True)
    shutil.rmtree(into / "bin", ignore_errors=True)
    for record in into.glob("*.dist-info/RECORD"):
        info = record.parent
        (info / "direct_url.json").unlink(missing_ok=True)
        kept = [
            line
            for line in record.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("../") and not line.startswith(f"{info.name}/direct_url.json,")
        ]
        record.write_text("\n".join(kept) + "\n", encoding="utf-8")
    strays = [str(path.relative_to(into)) for path in into.rglob("*") if path.name == "__pycache__"]
    if strays:
        raise SystemExit(f"bundle_python: pip compiled {strays[0]} despite --no-compile")


def tree_digest(path: Path) -> str:
    """A digest of a file, or of a folder's relative paths and contents."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        digest.update(str(file.relative_to(path)).encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def share_identical(installs: dict[str, Path], lib: Path) -> list[str]:
    """Move each top-level entry that every install holds alike into ``lib/common``, the rest into ``lib/<tag>``;
    return the shared entries' names. Whole top-level entries only: a package is imported from one folder."""
    digests = {tag: {entry.name: tree_digest(entry) for entry in folder.iterdir()} for tag, folder in installs.items()}
    first, *others = digests.values()
    shared = sorted(name for name, digest in first.items() if all(other.get(name) == digest for other in others))
    common = lib / COMMON
    common.mkdir(parents=True)
    for tag, folder in installs.items():
        for entry in sorted(folder.iterdir()):
            if entry.name not in shared:
                (lib / tag).mkdir(exist_ok=True)
                entry.rename(lib / tag / entry.name)
            elif not (common / entry.name).exists():
                entry.rename(common / entry.name)
            elif entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    return shared


def compile_for_this_python(lib: Path) -> str | None:
    """Compile what this CPython imports from ``lib`` (``common`` and its own folder) into ``__pycache__`` as
    ``checked-hash`` ``.pyc`` files; return its version (``3.11``), or None when the package has no libraries for it.

    The ``.pyc`` record paths relative to the package (``lib/common/…``), not this machine's (Python replaces them
    with the real path when it loads one). A module this Python cannot compile (code for a newer one) is skipped.
    """
    python = (sys.version_info[0], sys.version_info[1])
    if sys.implementation.name != "cpython" or python not in PYTHONS:
        return None
    for folder in (lib / COMMON, lib / python_tag(python)):
        if folder.is_dir():
            compileall.compile_dir(
                folder,
                ddir=f"{lib.name}/{folder.name}",
                quiet=2,
                workers=1,
                invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
            )
    return python_label(python)


def folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--target", choices=[UNIVERSAL, *TARGETS], default=UNIVERSAL)
    parser.add_argument("--cache", type=Path, default=default_cache())
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    out: Path = args.out
    cache: Path = args.cache
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cache.mkdir(parents=True, exist_ok=True)
    staging = out / ".staging"

    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(staging), str(PROJECT)],
        check=True,
    )
    [sidecar] = staging.glob("host_bridge-*.whl")
    versions = runtime_closure("host-bridge")
    versions.pop("host-bridge")
    pins = {canonicalize_name(name): Version(version) for name, version in versions.items()}

    if args.target == UNIVERSAL:
        # pip itself is pure: any target and Python find the same wheel.
        pip_pin = f"pip=={metadata.version('pip')}"
        [pip] = resolve([pip_pin], {}, TARGETS["linux-x64"], PYTHONS[0], cache).chosen.values()
        (out / "wheels").mkdir()
        shutil.copyfile(cache / pip.filename, out / "wheels" / pip.filename)
        sidecar.rename(out / sidecar.name)
        lines = [f"{name}=={version}" for name, version in sorted(pins.items())]
        (out / "constraints.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        manifest: dict[str, object] = {"target": UNIVERSAL, "pythons": [], "pip": pip.filename}
        (out / "bundle.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        shutil.rmtree(staging)
        print(
            f"bundled {sidecar.name} for universal: {len(lines)} pinned dependencies from the package index at "
            f"first start, {folder_size(out) / 1e6:.1f} MB"
        )
        return 0

    target = TARGETS[args.target]
    with zipfile.ZipFile(sidecar) as opened:
        roots = wheel_requires(opened)
    tested = dict(pins)
    while True:
        # Start again when a pin had to give way, so that every Python gets the same versions.
        before = dict(pins)
        closures = [resolve(roots, pins, target, python, cache) for python in PYTHONS]
        if pins == before:
            break
    for replaced in tested.keys() - pins.keys():
        chosen = {c.chosen[replaced].version for c in closures if replaced in c.chosen}
        if len(chosen) != 1:
            raise SystemExit(f"bundle_python: {target.name}: no one version of {replaced} for every Python")
        [version] = chosen
        print(f"  {target.name} gets {replaced} {version} instead of {tested[replaced]}")
    installs: dict[str, Path] = {}
    for python, result in zip(PYTHONS, closures, strict=True):
        tag = python_tag(python)
        wheels = [sidecar, *(cache / wheel.filename for wheel in result.chosen.values())]
        print(f"  laying out {len(wheels)} wheels for {target.name}, CPython {python_label(python)}")
        install_target(wheels, target, python, staging / tag)
        installs[tag] = staging / tag
    unshared = sum(folder_size(folder) for folder in installs.values())
    shared = share_identical(installs, out / "lib")
    shutil.rmtree(staging)
    shutil.copyfile(HERE / LAUNCHER, out / LAUNCHER)
    pythons = [python_label(python) for python in PYTHONS]
    lib = out / "lib"
    compiled = compile_for_this_python(lib)
    manifest = {
        "target": args.target,
        "pythons": pythons,
        "compiled": [compiled] if compiled else [],
        "launcher": LAUNCHER,
    }
    (out / "bundle.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    each = ", ".join(f"{folder.name} {folder_size(folder) / 1e6:.1f} MB" for folder in sorted(lib.iterdir()))
    print(
        f"bundled {sidecar.name} for {args.target}, laid out for CPython {pythons[0]}–{pythons[-1]}: "
        f"{len(shared)} top-level entries shared; {each}; {folder_size(out) / 1e6:.1f} MB in all "
        f"({unshared / 1e6:.1f} MB unshared); compiled for CPython {compiled or 'none'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
