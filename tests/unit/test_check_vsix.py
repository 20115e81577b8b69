"""vscode-extension/scripts/check_vsix.py over small packages built here: what a platform .vsix must hold, laid out
ready to import, for CPython 3.11–3.14 of its platform (with that platform's markers), and what no package may
hold."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import py_compile
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "vscode-extension" / "scripts"
sys.path.insert(0, str(SCRIPTS))
import check_vsix  # noqa: E402

PYTHONS = ("311", "312", "313", "314")
PIP = "pip-26.3-py3-none-any.whl"
LIB = "extension/python/lib"
LAUNCHER = (SCRIPTS / "run_sidecar.py").read_bytes()


@dataclass(frozen=True)
class Dist:
    """A distribution as ``pip install --target`` leaves it: its files, and a .dist-info that records them."""

    name: str
    version: str
    tags: tuple[str, ...] = ("py3-none-any",)
    requires: tuple[str, ...] = ()
    files: dict[str, bytes] = field(default_factory=dict[str, bytes])

    def installed(self) -> dict[str, bytes]:
        info = f"{self.name}-{self.version}.dist-info"
        headers = [f"Metadata-Version: 2.1\nName: {self.name}\nVersion: {self.version}"]
        headers += [f"Requires-Dist: {line}" for line in self.requires]
        files = {
            **self.files,
            f"{info}/METADATA": ("\n".join(headers) + "\n\nA description.\n").encode(),
            f"{info}/WHEEL": ("Wheel-Version: 1.0\n" + "".join(f"Tag: {t}\n" for t in self.tags)).encode(),
            f"{info}/INSTALLER": b"pip\n",
        }
        lines = [f"{path},sha256={digest(body)},{len(body)}" for path, body in files.items()]
        files[f"{info}/RECORD"] = ("\n".join([*lines, f"{info}/RECORD,,"]) + "\n").encode()
        return files


def digest(body: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()


SIDECAR = Dist(
    "host_bridge",
    "0.1.0",
    requires=("purelib>=1", "fastlib>=2", "oldpy; python_version < '3.13'"),
    files={module: b"# module\n" for module in (*check_vsix.SIDECAR_MODULES, "host_bridge/__init__.py")},
)
PURELIB = Dist("purelib", "1.0", files={"purelib/__init__.py": b"# pure\n"})
OLDPY = Dist("oldpy", "0.5", files={"oldpy.py": b"# a backport\n"})
#: fastlib needs pywinonly on Windows only: a linux package must not carry it, a Windows one must.
FASTLIB_REQUIRES = ("pywinonly>=1; sys_platform == 'win32'",)
PYWINONLY = Dist("pywinonly", "1.0", files={"pywinonly.py": b"# windows\n"})


def fastlib(py: str, platform: str = "manylinux_2_17_x86_64") -> Dist:
    """fastlib's build for CPython 3.<py>: its own compiled module."""
    return Dist(
        "fastlib",
        "2.0",
        tags=(f"cp{py}-cp{py}-{platform}",),
        requires=FASTLIB_REQUIRES,
        files={"fastlib/__init__.py": b"# fast\n", f"fastlib/_speed.cpython-{py}-x86_64-linux-gnu.so": py.encode()},
    )


def linux_lib() -> dict[str, list[Dist]]:
    """The lib/ folders of a complete linux-x64 package, as bundle_python.py lays them out."""
    lib: dict[str, list[Dist]] = {"common": [SIDECAR, PURELIB]}
    for py in PYTHONS:
        lib[f"cp{py}"] = [fastlib(py), *([OLDPY] if py in ("311", "312") else [])]
    return lib


def build(
    path: Path,
    *,
    target: str = "linux-x64",
    lib: dict[str, list[Dist]] | None = None,
    bundle: dict[str, object] | None = None,
    extra: dict[str, bytes] | None = None,
    leave: tuple[str, ...] = (),
    package: dict[str, object] | None = None,
    wheels: dict[str, bytes] | None = None,
) -> str:
    """Write a .vsix as vsce does (extension.vsixmanifest with TargetPlatform, extension/…): a platform package's
    launcher and lib/, or the universal package's sidecar wheel, pins and pip."""
    platform = "" if target == "universal" else f' TargetPlatform="{target}"'
    manifest = package or {"main": "./dist/extension.js", "extensionKind": ["workspace"]}
    files: dict[str, bytes] = {
        "extension.vsixmanifest": f'<Identity Id="host-bridge" Version="0.1.0"{platform} />'.encode(),
        "[Content_Types].xml": b"<Types/>",
        "extension/package.json": json.dumps(manifest).encode(),
        "extension/readme.md": b"# MCP Host Bridge",
        "extension/LICENSE.txt": b"MIT",
        "extension/dist/extension.js": b"class LanguageClient {}",
    }
    if target == "universal":
        files["extension/python/host_bridge-0.1.0-py3-none-any.whl"] = sidecar_wheel()
        files["extension/python/constraints.txt"] = b"fastlib==2.0\npurelib==1.0\n"
        for name, body in (wheels if wheels is not None else {PIP: b""}).items():
            files[f"extension/python/wheels/{name}"] = body
        manifest_json: dict[str, object] = {"target": target, "pythons": [], "pip": PIP}
    else:
        files["extension/python/run_sidecar.py"] = LAUNCHER
        for folder, dists in (lib if lib is not None else linux_lib()).items():
            for dist in dists:
                files.update({f"{LIB}/{folder}/{name}": body for name, body in dist.installed().items()})
        labels = [f"3.{py[1:]}" for py in PYTHONS]
        manifest_json = {"target": target, "pythons": labels, "launcher": "run_sidecar.py"}
    files["extension/python/bundle.json"] = json.dumps({**manifest_json, **(bundle or {})}).encode()
    files.update(extra or {})
    with zipfile.ZipFile(path, "w") as vsix:
        for name, body in files.items():
            if name not in leave:
                vsix.writestr(name, body)
    return str(path)


def sidecar_wheel(extra: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for name, body in SIDECAR.installed().items():
            if not name.endswith(("RECORD", "INSTALLER")):
                out.writestr(name, body)
        for name in extra:
            out.writestr(name, b"")
    return buffer.getvalue()


def test_a_complete_linux_package_passes(tmp_path: Path) -> None:
    report = check_vsix.check(build(tmp_path / "p.vsix"))
    assert report.problems == []
    assert report.target == "linux-x64"
    assert report.holds == "laid out for CPython 3.11–3.14 (2 distributions shared, rest per Python)"


def test_a_missing_distribution_for_one_python_is_named(tmp_path: Path) -> None:
    lib = linux_lib()
    lib["cp314"] = []
    problems = check_vsix.check(build(tmp_path / "p.vsix", lib=lib)).problems
    assert problems == ["CPython 3.14: no wheel of fastlib>=2 for CPython 3.14 on linux-x64"]


def test_what_only_older_pythons_need_is_required_for_them_only(tmp_path: Path) -> None:
    lib = linux_lib()
    lib["cp311"] = [fastlib("311")]
    problems = check_vsix.check(build(tmp_path / "p.vsix", lib=lib)).problems
    assert problems == ["CPython 3.11: no wheel of oldpy for CPython 3.11 on linux-x64"]


def test_a_shared_distribution_must_be_imported_by_every_python(tmp_path: Path) -> None:
    lib = linux_lib()
    lib["common"].append(OLDPY)
    lib["cp311"] = [fastlib("311")]
    lib["cp312"] = [fastlib("312")]
    problems = check_vsix.check(build(tmp_path / "p.vsix", lib=lib)).problems
    assert problems == [
        "lib/common/oldpy-0.5.dist-info is imported by CPython 3.11, CPython 3.12, not by every supported CPython"
    ]


def test_another_platforms_build_is_refused(tmp_path: Path) -> None:
    lib = linux_lib()
    lib["cp312"] = [fastlib("312", "win_amd64"), OLDPY]
    problems = check_vsix.check(build(tmp_path / "p.vsix", lib=lib)).problems
    assert problems == [
        "CPython 3.12: no wheel of fastlib>=2 for CPython 3.12 on linux-x64",
        "lib/cp312/fastlib-2.0.dist-info is imported by no supported CPython, not by CPython 3.12",
    ]


def test_another_pythons_build_is_refused(tmp_path: Path) -> None:
    lib = linux_lib()
    lib["cp313"] = [fastlib("312")]
    problems = check_vsix.check(build(tmp_path / "p.vsix", lib=lib)).problems
    assert problems == [
        "CPython 3.13: no wheel of fastlib>=2 for CPython 3.13 on linux-x64",
        "lib/cp313/fastlib-2.0.dist-info is imported by no supported CPython, not by CPython 3.13",
    ]


def test_a_dependency_of_another_platform_only_is_not_carried_here(tmp_path: Path) -> None:
    lib = linux_lib()
    lib["common"].append(PYWINONLY)
    problems = check_vsix.check(build(tmp_path / "p.vsix", lib=lib)).problems
    assert problems == [
        "lib/common/pywinonly-1.0.dist-info is imported by no supported CPython, not by every supported CPython"
    ]


def test_a_windows_package_must_carry_what_windows_alone_needs(tmp_path: Path) -> None:
    lib = linux_lib()
    for py in PYTHONS:
        lib[f"cp{py}"] = [fastlib(py, "win_amd64"), *([OLDPY] if py in ("311", "312") else [])]
    problems = check_vsix.check(build(tmp_path / "p.vsix", target="win32-x64", lib=lib)).problems
    assert problems == [
        f"CPython 3.{py[1:]}: no wheel of pywinonly>=1 for CPython 3.{py[1:]} on win32-x64" for py in PYTHONS
    ]
    lib["common"].append(PYWINONLY)
    assert check_vsix.check(build(tmp_path / "q.vsix", target="win32-x64", lib=lib)).problems == []


def test_one_abi3_build_in_common_serves_every_python(tmp_path: Path) -> None:
    abi3 = Dist("fastlib", "2.0", tags=("cp311-abi3-manylinux_2_28_x86_64",), files={"fastlib/_speed.abi3.so": b""})
    lib = {"common": [SIDECAR, PURELIB, abi3], **{f"cp{py}": [] for py in PYTHONS}}
    lib["cp311"] = lib["cp312"] = [OLDPY]
    report = check_vsix.check(build(tmp_path / "p.vsix", lib=lib))
    assert report.problems == []


def test_a_file_unlike_its_record_or_missing_is_named_for_each_python(tmp_path: Path) -> None:
    changed = f"{LIB}/common/purelib/__init__.py"
    problems = check_vsix.check(build(tmp_path / "p.vsix", extra={changed: b"# tampered\n"})).problems
    assert problems == [f"CPython 3.{py[1:]}: lib/common/purelib/__init__.py differs from its RECORD" for py in PYTHONS]
    gone = f"{LIB}/cp313/fastlib/_speed.cpython-313-x86_64-linux-gnu.so"
    problems = check_vsix.check(build(tmp_path / "q.vsix", leave=(gone,))).problems
    assert problems == [
        "CPython 3.13: lib/cp313/fastlib-2.0.dist-info records fastlib/_speed.cpython-313-x86_64-linux-gnu.so, "
        "which is missing"
    ]


def test_a_file_no_distribution_owns_is_refused(tmp_path: Path) -> None:
    problems = check_vsix.check(build(tmp_path / "p.vsix", extra={f"{LIB}/cp312/notes.txt": b""})).problems
    assert problems == ["CPython 3.12: lib/cp312/notes.txt belongs to no distribution"]


def test_the_same_file_in_common_and_a_pythons_folder_is_refused(tmp_path: Path) -> None:
    lib = linux_lib()
    lib["cp311"].append(PURELIB)
    problems = check_vsix.check(build(tmp_path / "p.vsix", lib=lib)).problems
    assert "lib/common/purelib/__init__.py and lib/cp311/purelib/__init__.py both exist" in problems


def test_a_folder_for_an_unsupported_python_is_refused(tmp_path: Path) -> None:
    lib = {**linux_lib(), "cp310": [fastlib("310")]}
    problems = check_vsix.check(build(tmp_path / "q.vsix", lib=lib)).problems
    assert problems == ["lib/cp310/ is for no supported CPython"]


def test_the_launcher_is_the_one_in_scripts(tmp_path: Path) -> None:
    problems = check_vsix.check(build(tmp_path / "p.vsix", leave=("extension/python/run_sidecar.py",))).problems
    assert problems == ["missing extension/python/run_sidecar.py"]
    old = {"extension/python/run_sidecar.py": b"import host_bridge\n"}
    problems = check_vsix.check(build(tmp_path / "q.vsix", extra=old)).problems
    assert problems == ["extension/python/run_sidecar.py is not scripts/run_sidecar.py"]
    problems = check_vsix.check(build(tmp_path / "r.vsix", bundle={"launcher": "main.py"})).problems
    assert problems == ["bundle.json names launcher 'main.py', expected 'run_sidecar.py'"]


@pytest.mark.parametrize(
    "name",
    [
        "extension/node_modules/vscode-languageclient/package.json",
        "extension/.venv/bin/python",
        "extension/test/unit/bootstrap.test.ts",
        "extension/src/extension.ts",
        "extension/dist/extension.js.map",
        "extension/python/host_bridge/__init__.py",
        f"{LIB}/cp311/oldpy.cpython-311.pyc",
        f"{LIB}/common/bin/host-bridge",
        f"{LIB}/common/purelib-1.0.dist-info/direct_url.json",
        "extension/python/wheels/fastlib-2.0-py3-none-any.whl",
        "extension/python/constraints.txt",
        "extension/python/host_bridge-0.1.0-py3-none-any.whl",
    ],
)
def test_files_outside_the_bundle_are_refused(tmp_path: Path, name: str) -> None:
    problems = check_vsix.check(build(tmp_path / "p.vsix", extra={name: b""})).problems
    assert f"must not contain {name}" in problems


THIS = f"3.{sys.version_info[1]}"
"""The CPython running the tests, as bundle.json names the one the libraries are compiled for."""
CACHE_TAG = sys.implementation.cache_tag
PURELIB_PYC = f"{LIB}/common/purelib/__pycache__/__init__.{CACHE_TAG}.pyc"


def pyc(tmp_path: Path, source: bytes, mode: py_compile.PycInvalidationMode) -> bytes:
    """``source`` compiled by this CPython as bundle_python.py compiles the libraries (or with another ``mode``)."""
    module, compiled = tmp_path / "module.py", tmp_path / "module.pyc"
    module.write_bytes(source)
    py_compile.compile(str(module), str(compiled), doraise=True, invalidation_mode=mode)
    return compiled.read_bytes()


def test_checked_hash_pycs_of_the_python_the_libraries_are_compiled_for_pass(tmp_path: Path) -> None:
    compiled = {PURELIB_PYC: pyc(tmp_path, b"# pure\n", py_compile.PycInvalidationMode.CHECKED_HASH)}
    problems = check_vsix.check(build(tmp_path / "p.vsix", bundle={"compiled": [THIS]}, extra=compiled)).problems
    assert problems == []


def test_a_pyc_of_another_python_than_the_compiled_one_is_refused(tmp_path: Path) -> None:
    other = f"{LIB}/common/purelib/__pycache__/__init__.cpython-399.pyc"
    problems = check_vsix.check(build(tmp_path / "p.vsix", bundle={"compiled": [THIS]}, extra={other: b""})).problems
    assert problems == [
        f"lib/common/purelib/__pycache__/__init__.cpython-399.pyc: bundle.json says the libraries are compiled for "
        f"CPython {[THIS]!r}, not this one"
    ]


def test_a_pyc_that_unpacking_makes_stale_is_refused(tmp_path: Path) -> None:
    compiled = {PURELIB_PYC: pyc(tmp_path, b"# pure\n", py_compile.PycInvalidationMode.TIMESTAMP)}
    problems = check_vsix.check(build(tmp_path / "p.vsix", bundle={"compiled": [THIS]}, extra=compiled)).problems
    assert problems == [
        f"{PURELIB_PYC.removeprefix('extension/python/')} is not a checked-hash .pyc (flags 0): unpacking would "
        "make it stale"
    ]


def test_a_pyc_of_another_text_or_of_no_module_is_refused(tmp_path: Path) -> None:
    stale = {PURELIB_PYC: pyc(tmp_path, b"# older\n", py_compile.PycInvalidationMode.CHECKED_HASH)}
    problems = check_vsix.check(build(tmp_path / "p.vsix", bundle={"compiled": [THIS]}, extra=stale)).problems
    assert problems == [
        f"{PURELIB_PYC.removeprefix('extension/python/')} was not compiled from lib/common/purelib/__init__.py as "
        "the package holds it"
    ]
    orphan = {f"{LIB}/common/purelib/__pycache__/gone.{CACHE_TAG}.pyc": stale[PURELIB_PYC]}
    problems = check_vsix.check(build(tmp_path / "q.vsix", bundle={"compiled": [THIS]}, extra=orphan)).problems
    assert problems == [f"lib/common/purelib/__pycache__/gone.{CACHE_TAG}.pyc has no module lib/common/purelib/gone.py"]


def test_the_universal_package_carries_the_sidecar_wheel_and_pip_only(tmp_path: Path) -> None:
    report = check_vsix.check(build(tmp_path / "u.vsix", target="universal"))
    assert report.problems == []
    assert report.holds == "dependencies from the package index at first start"
    wheels = {PIP: b"", "purelib-1.0-py3-none-any.whl": b""}
    problems = check_vsix.check(build(tmp_path / "v.vsix", target="universal", wheels=wheels)).problems
    assert problems == ["the universal package must not contain wheels/purelib-1.0-py3-none-any.whl"]
    extra = {"extension/python/run_sidecar.py": LAUNCHER, f"{LIB}/common/purelib/__init__.py": b""}
    problems = check_vsix.check(build(tmp_path / "w.vsix", target="universal", extra=extra)).problems
    assert problems == [f"must not contain {name}" for name in extra]


def test_the_universal_sidecar_wheel_holds_the_package_only(tmp_path: Path) -> None:
    wheel = {"extension/python/host_bridge-0.1.0-py3-none-any.whl": sidecar_wheel(("tests/unit/test_x.py",))}
    problems = check_vsix.check(build(tmp_path / "p.vsix", target="universal", extra=wheel)).problems
    assert problems == ["the sidecar wheel must not contain tests/unit/test_x.py"]


def test_every_supported_python_must_be_declared(tmp_path: Path) -> None:
    problems = check_vsix.check(build(tmp_path / "p.vsix", bundle={"pythons": ["3.11", "3.12"]})).problems
    assert problems == ["bundle.json lists Pythons ['3.11', '3.12'], expected ['3.11', '3.12', '3.13', '3.14']"]


def test_the_manifest_must_run_in_the_workspace(tmp_path: Path) -> None:
    path = build(tmp_path / "p.vsix", package={"main": "./dist/extension.js", "extensionKind": ["ui", "workspace"]})
    assert check_vsix.check(path).problems == [
        "package.json extensionKind is ['ui', 'workspace'], expected ['workspace']"
    ]


def test_main_prints_the_sizes_or_the_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = build(tmp_path / "good.vsix")
    bad = build(tmp_path / "bad.vsix", leave=("extension/python/bundle.json",))
    assert check_vsix.main([good, bad]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(f"{good}: ok, linux-x64, 0.0 MB (0.0 MB installed), laid out for CPython 3.11–3.14")
    assert err == f"{bad}: missing extension/python/bundle.json\n"
    assert check_vsix.main([good]) == 0
