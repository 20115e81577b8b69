"""vscode-extension/scripts/check_vsix.py over small packages built here: what a platform .vsix must hold for
CPython 3.11–3.14 of its platform (with that platform's markers), and what no package may hold."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "vscode-extension" / "scripts"
sys.path.insert(0, str(SCRIPTS))
import check_vsix  # noqa: E402

PYTHONS = ("311", "312", "313", "314")
PIP = "pip-26.3-py3-none-any.whl"


def wheel(filename: str, requires: tuple[str, ...] = (), files: tuple[str, ...] = ()) -> bytes:
    name, version = filename.split("-")[:2]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for file in files:
            out.writestr(file, "")
        headers = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}"]
        headers += [f"Requires-Dist: {line}" for line in requires]
        out.writestr(f"{name}-{version}.dist-info/METADATA", "\n".join(headers) + "\n\nA description.\n")
    return buffer.getvalue()


SIDECAR_FILES = (*check_vsix.WHEEL_MODULES, "host_bridge/__init__.py")
SIDECAR_REQUIRES = ("purelib>=1", "fastlib>=2", "oldpy; python_version < '3.13'")
#: fastlib needs pywinonly on Windows only: a linux package must not carry it, a Windows one must.
FASTLIB_REQUIRES = ("pywinonly>=1; sys_platform == 'win32'",)


def linux_wheels() -> dict[str, bytes]:
    wheels = {
        PIP: wheel(PIP),
        "purelib-1.0-py3-none-any.whl": wheel("purelib-1.0-py3-none-any.whl"),
        "oldpy-0.5-py3-none-any.whl": wheel("oldpy-0.5-py3-none-any.whl"),
    }
    for py in PYTHONS:
        name = f"fastlib-2.0-cp{py}-cp{py}-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
        wheels[name] = wheel(name, FASTLIB_REQUIRES)
    return wheels


def build(
    path: Path,
    *,
    target: str = "linux-x64",
    wheels: dict[str, bytes] | None = None,
    pythons: list[str] | None = None,
    extra: dict[str, bytes] | None = None,
    sidecar_files: tuple[str, ...] = SIDECAR_FILES,
    package: dict[str, object] | None = None,
) -> str:
    """Write a .vsix as vsce does (extension.vsixmanifest with TargetPlatform, extension/…)."""
    platform = "" if target == "universal" else f' TargetPlatform="{target}"'
    labels = [f"3.{py[1:]}" for py in PYTHONS]
    bundle = {"target": target, "pythons": labels if target != "universal" else [], "pip": PIP}
    if pythons is not None:
        bundle["pythons"] = pythons
    manifest = package or {"main": "./dist/extension.js", "extensionKind": ["workspace"]}
    with zipfile.ZipFile(path, "w") as vsix:
        vsix.writestr("extension.vsixmanifest", f'<Identity Id="host-bridge" Version="0.1.0"{platform} />')
        vsix.writestr("[Content_Types].xml", "<Types/>")
        vsix.writestr("extension/package.json", json.dumps(manifest))
        vsix.writestr("extension/readme.md", "# MCP Host Bridge")
        vsix.writestr("extension/LICENSE.txt", "MIT")
        vsix.writestr("extension/dist/extension.js", "class LanguageClient {}")
        vsix.writestr(
            "extension/python/host_bridge-0.1.0-py3-none-any.whl",
            wheel("host_bridge-0.1.0-py3-none-any.whl", SIDECAR_REQUIRES, sidecar_files),
        )
        vsix.writestr("extension/python/constraints.txt", "fastlib==2.0\npurelib==1.0\noldpy==0.5\n")
        vsix.writestr("extension/python/bundle.json", json.dumps(bundle))
        for name, body in (wheels if wheels is not None else linux_wheels()).items():
            vsix.writestr(f"extension/python/wheels/{name}", body)
        for name, body in (extra or {}).items():
            vsix.writestr(name, body)
    return str(path)


def test_a_complete_linux_package_passes_and_reports_its_wheels(tmp_path: Path) -> None:
    report = check_vsix.check(build(tmp_path / "p.vsix"))
    assert report.problems == []
    assert (report.target, report.wheels) == ("linux-x64", 7)


def test_a_missing_wheel_for_one_python_is_named(tmp_path: Path) -> None:
    wheels = linux_wheels()
    del wheels["fastlib-2.0-cp314-cp314-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"]
    problems = check_vsix.check(build(tmp_path / "p.vsix", wheels=wheels)).problems
    assert problems == ["no wheel of fastlib==2.0 for CPython 3.14 on linux-x64"]


def test_a_wheel_only_older_pythons_need_is_required_for_them_only(tmp_path: Path) -> None:
    wheels = linux_wheels()
    del wheels["oldpy-0.5-py3-none-any.whl"]
    problems = check_vsix.check(build(tmp_path / "p.vsix", wheels=wheels)).problems
    assert problems == [
        "no wheel of oldpy==0.5 for CPython 3.11 on linux-x64",
        "no wheel of oldpy==0.5 for CPython 3.12 on linux-x64",
    ]


def test_a_pinned_version_is_required(tmp_path: Path) -> None:
    wheels = linux_wheels()
    del wheels["purelib-1.0-py3-none-any.whl"]
    wheels["purelib-1.1-py3-none-any.whl"] = wheel("purelib-1.1-py3-none-any.whl")
    problems = check_vsix.check(build(tmp_path / "p.vsix", wheels=wheels)).problems
    assert "no wheel of purelib==1.0 for CPython 3.11 on linux-x64" in problems
    assert "wheels/purelib-1.1-py3-none-any.whl is installed by no supported CPython on linux-x64" in problems


def test_another_platforms_wheel_is_refused(tmp_path: Path) -> None:
    wheels = linux_wheels()
    wheels["fastlib-2.0-cp312-cp312-win_amd64.whl"] = wheel("fastlib-2.0-cp312-cp312-win_amd64.whl")
    wheels["fastlib-2.0-cp312-cp312-manylinux_2_17_aarch64.whl"] = wheel(
        "fastlib-2.0-cp312-cp312-manylinux_2_17_aarch64.whl"
    )
    problems = check_vsix.check(build(tmp_path / "p.vsix", wheels=wheels)).problems
    assert problems == [
        "wheels/fastlib-2.0-cp312-cp312-manylinux_2_17_aarch64.whl is not for linux-x64 (CPython 3.11–3.14)",
        "wheels/fastlib-2.0-cp312-cp312-win_amd64.whl is not for linux-x64 (CPython 3.11–3.14)",
    ]


def test_a_wheel_for_a_too_new_glibc_is_refused(tmp_path: Path) -> None:
    wheels = linux_wheels()
    name = "fastlib-2.0-cp312-cp312-manylinux_2_34_x86_64.whl"
    wheels[name] = wheel(name)
    problems = check_vsix.check(build(tmp_path / "p.vsix", wheels=wheels)).problems
    assert problems == [f"wheels/{name} is not for linux-x64 (CPython 3.11–3.14)"]


def test_a_dependency_of_another_platform_only_is_not_needed_here(tmp_path: Path) -> None:
    wheels = linux_wheels()
    wheels["pywinonly-1.0-py3-none-any.whl"] = wheel("pywinonly-1.0-py3-none-any.whl")
    problems = check_vsix.check(build(tmp_path / "p.vsix", wheels=wheels)).problems
    assert problems == ["wheels/pywinonly-1.0-py3-none-any.whl is installed by no supported CPython on linux-x64"]


def test_a_windows_package_must_carry_what_windows_alone_needs(tmp_path: Path) -> None:
    wheels = {name: body for name, body in linux_wheels().items() if "manylinux" not in name}
    for py in PYTHONS:
        name = f"fastlib-2.0-cp{py}-cp{py}-win_amd64.whl"
        wheels[name] = wheel(name, FASTLIB_REQUIRES)
    problems = check_vsix.check(build(tmp_path / "p.vsix", target="win32-x64", wheels=wheels)).problems
    assert problems == [f"no wheel of pywinonly>=1 for CPython 3.{py[1:]} on win32-x64" for py in PYTHONS]
    wheels["pywinonly-1.0-py3-none-any.whl"] = wheel("pywinonly-1.0-py3-none-any.whl")
    assert check_vsix.check(build(tmp_path / "q.vsix", target="win32-x64", wheels=wheels)).problems == []


def test_one_abi3_wheel_serves_every_python(tmp_path: Path) -> None:
    wheels = {name: body for name, body in linux_wheels().items() if not name.startswith("fastlib")}
    name = "fastlib-2.0-cp311-abi3-manylinux_2_28_x86_64.whl"
    wheels[name] = wheel(name)
    report = check_vsix.check(build(tmp_path / "p.vsix", wheels=wheels))
    assert report.problems == []
    assert report.wheels == 4


@pytest.mark.parametrize(
    "name",
    [
        "extension/node_modules/vscode-languageclient/package.json",
        "extension/.venv/bin/python",
        "extension/test/unit/bootstrap.test.ts",
        "extension/src/extension.ts",
        "extension/dist/extension.js.map",
        "extension/python/host_bridge/__init__.py",
        "extension/python/wheels/__pycache__/x.pyc",
        "extension/python/host_bridge-0.1.0-cp311-cp311-linux_x86_64.whl.tmp",
    ],
)
def test_files_outside_the_bundle_are_refused(tmp_path: Path, name: str) -> None:
    problems = check_vsix.check(build(tmp_path / "p.vsix", extra={name: b""})).problems
    assert problems == [f"must not contain {name}"]


def test_a_file_that_is_not_a_wheel_is_named(tmp_path: Path) -> None:
    problems = check_vsix.check(build(tmp_path / "p.vsix", extra={"extension/python/wheels/notes.whl": b""})).problems
    assert [problem.split(" (")[0] for problem in problems] == [
        "extension/python/wheels/notes.whl: Invalid wheel filename"
    ]


def test_the_sidecar_wheel_holds_the_package_only(tmp_path: Path) -> None:
    path = build(tmp_path / "p.vsix", sidecar_files=(*SIDECAR_FILES, "tests/unit/test_x.py"))
    assert check_vsix.check(path).problems == ["the sidecar wheel must not contain tests/unit/test_x.py"]


def test_the_universal_package_carries_pip_only(tmp_path: Path) -> None:
    assert check_vsix.check(build(tmp_path / "u.vsix", target="universal", wheels={PIP: wheel(PIP)})).problems == []
    problems = check_vsix.check(build(tmp_path / "v.vsix", target="universal")).problems
    assert "the universal package must not contain wheels/purelib-1.0-py3-none-any.whl" in problems


def test_every_supported_python_must_be_declared(tmp_path: Path) -> None:
    problems = check_vsix.check(build(tmp_path / "p.vsix", pythons=["3.11", "3.12"])).problems
    assert problems == ["bundle.json lists Pythons ['3.11', '3.12'], expected ['3.11', '3.12', '3.13', '3.14']"]


def test_the_manifest_must_run_in_the_workspace(tmp_path: Path) -> None:
    path = build(tmp_path / "p.vsix", package={"main": "./dist/extension.js", "extensionKind": ["ui", "workspace"]})
    assert check_vsix.check(path).problems == [
        "package.json extensionKind is ['ui', 'workspace'], expected ['workspace']"
    ]


def test_main_prints_the_size_or_the_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = build(tmp_path / "good.vsix")
    wheels = linux_wheels()
    del wheels[PIP]
    bad = build(tmp_path / "bad.vsix", wheels=wheels)
    assert check_vsix.main([good, bad]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(f"{good}: ok, linux-x64, 0.0 MB, 7 wheels for CPython 3.11–3.14")
    assert err == f"{bad}: bundle.json names pip wheel {PIP!r}, which is not in python/wheels\n"
    assert check_vsix.main([good]) == 0
