"""vscode-extension/scripts/run_sidecar.py, the launcher of a platform .vsix, run as the extension runs it
(``python -I -S run_sidecar.py …``) over a small package built here: what is importable, and what it refuses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

LAUNCHER = Path(__file__).resolve().parents[2] / "vscode-extension" / "scripts" / "run_sidecar.py"
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"

#: The package's "host_bridge": reports what it sees instead of running the sidecar.
REPORTER = """
import json, sys
import extra_module
print(json.dumps({
    "argv": sys.argv[1:],
    "path": sys.path,
    "file": __file__,
    "extra": extra_module.WHERE,
    "encoding": sys.stderr.encoding,
    "shadowed": "shadow_marker" in sys.modules,
}))
"""


def package(tmp_path: Path, pythons: list[str], *, own_folder: bool = True) -> Path:
    """A platform package's ``python/`` folder: the launcher, bundle.json, lib/common and (``own_folder``) this
    Python's lib/cp3XY with a .pth file that adds a folder of its own, as pywin32's does."""
    python = tmp_path / "python"
    common = python / "lib" / "common"
    (common / "host_bridge").mkdir(parents=True)
    (common / "host_bridge" / "__init__.py").write_text("")
    (common / "host_bridge" / "__main__.py").write_text(REPORTER)
    shutil.copyfile(LAUNCHER, python / "run_sidecar.py")
    (python / "bundle.json").write_text(json.dumps({"target": "linux-x64", "pythons": pythons, "launcher": "x"}))
    if own_folder:
        specific = python / "lib" / TAG
        (specific / "win32").mkdir(parents=True)
        (specific / "win32" / "extra_module.py").write_text("WHERE = 'the folder the .pth file added'\n")
        (specific / "pywin32.pth").write_text("# as pywin32's\nwin32\n")
    else:
        (common / "extra_module.py").write_text("WHERE = 'common'\n")
    return python


def shadow(tmp_path: Path) -> Path:
    """A PYTHONPATH folder whose host_bridge and extra_module would break the start if imported."""
    folder = tmp_path / "shadow"
    for name in ("host_bridge", "extra_module"):
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text(f"import shadow_marker\nraise ImportError('shadowing {name}')\n")
    (folder / "shadow_marker.py").write_text("")
    return folder


def run(python: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-S", str(python / "run_sidecar.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


def test_runs_host_bridge_from_the_package_with_the_arguments_it_was_given(tmp_path: Path) -> None:
    python = package(tmp_path, ["3.11", "3.12", "3.13", "3.14", HERE])
    env = {**os.environ, "PYTHONPATH": str(shadow(tmp_path)), "PYTHONIOENCODING": "latin-1"}
    done = run(python, "attach", "fs", "--workspace", "/w", env=env)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["argv"] == ["attach", "fs", "--workspace", "/w"]
    assert seen["file"] == str(python / "lib" / "common" / "host_bridge" / "__main__.py")
    assert seen["extra"] == "the folder the .pth file added"
    assert seen["shadowed"] is False
    assert seen["encoding"] == "utf-8"
    # Only the standard library, then the package's folders as site-packages would be: no PYTHONPATH, no
    # site-packages of this interpreter or of the user.
    ours = [str(python / "lib" / "common"), str(python / "lib" / TAG), str(python / "lib" / TAG / "win32")]
    assert seen["path"][-3:] == ours
    assert not any("site-packages" in entry or "shadow" in entry for entry in seen["path"])


def test_a_python_whose_every_library_is_shared_needs_no_folder_of_its_own(tmp_path: Path) -> None:
    python = package(tmp_path, [HERE], own_folder=False)
    done = run(python, "serve")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert (seen["argv"], seen["extra"]) == (["serve"], "common")
    assert seen["path"][-1] == str(python / "lib" / "common")


def test_another_python_is_refused_with_the_ones_the_package_carries(tmp_path: Path) -> None:
    python = package(tmp_path, ["3.98", "3.99"])
    done = run(python, "serve")
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr == (
        f"host_bridge: this extension package carries the sidecar for CPython 3.98, 3.99, "
        f"not for cpython {HERE} ({sys.executable})\n"
    )
