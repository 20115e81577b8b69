"""The Makefile's set-up as a user meets it, run by the real ``make`` on a copy of the Makefile.

Python, pip, ``host-bridge`` and npm are stand-ins that record how they were called, so the tests see exactly what
``make run`` and ``make test`` would install and run, without a network or minutes of installing.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from support.paths import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")

GOOD_PYTHON = """#!/bin/sh
echo "$0 $*" >> "$MAKE_LOG"
case "$1" in
  -c) exit 0 ;;
  --version) echo "Python 3.12.1" ;;
  -m) if [ "$2" = venv ]; then
        mkdir -p "$3/bin"
        cp "$FAKES/venv-python" "$3/bin/python"
        cp "$FAKES/host-bridge" "$3/bin/host-bridge"
      fi ;;
esac
"""
OLD_PYTHON = """#!/bin/sh
echo "$0 $*" >> "$MAKE_LOG"
case "$1" in
  -c) exit 1 ;;
  --version) echo "Python 3.10.12" ;;
esac
"""
RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "$MAKE_LOG"
"""


def script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with the Makefile, a pyproject.toml, the extension's package.json and the compatibility layouts'
    inputs the Makefile reads."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(REPO / "Makefile", root / "Makefile")
    (root / "pyproject.toml").write_text('[project]\nname = "host-bridge"\n')
    for folder in ("vscode-extension", "tests/peers"):
        (root / folder).mkdir(parents=True)
        (root / folder / "package.json").write_text('{\n  "version": "0.1.0",\n}\n')
        (root / folder / "package-lock.json").write_text("{}\n")
    for compat_input in ("layouts.sh", "python-constraints.txt"):  # what the compatibility layouts are made from
        (root / "tests" / "compat").mkdir(parents=True, exist_ok=True)
        (root / "tests" / "compat" / compat_input).write_text("")
    fakes = tmp_path / "fakes"
    script(fakes / "python3", GOOD_PYTHON)
    script(fakes / "old-python", OLD_PYTHON)
    script(fakes / "venv-python", RECORDER.replace('$(basename "$0")', "venv-python"))
    script(fakes / "host-bridge", RECORDER)
    script(tmp_path / "bin" / "npm", RECORDER)
    return root


def make(project: Path, *targets: str, python: str = "python3") -> tuple[subprocess.CompletedProcess[str], list[str]]:
    fakes = project.parent / "fakes"
    log = project.parent / "calls.log"
    log.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    env.update(
        MAKE_LOG=str(log),
        FAKES=str(fakes),
        PATH=f"{project.parent / 'bin'}{os.pathsep}{env.get('PATH', '')}",
    )
    result = subprocess.run(
        ["make", "--no-print-directory", *targets, f"PYTHON={fakes / python}"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return result, [call.replace(str(fakes) + "/", "") for call in calls]


def test_make_run_installs_only_the_runtime_dependencies_with_progress_then_runs_connect(project: Path) -> None:
    result, calls = make(project, "run")

    assert result.returncode == 0, result.stderr
    assert "creating .venv with Python 3.12.1 (first run only)" in result.stdout
    assert "installing host_bridge and its runtime dependencies into .venv (first run only" in result.stdout
    assert "venv-python -m pip install --disable-pip-version-check --progress-bar on -e ." in calls
    assert not any("[test,dev]" in call or "--quiet" in call for call in calls), calls
    assert not any(call.startswith("npm") for call in calls), calls
    assert calls[-1] == "host-bridge connect --list ."


def test_make_run_a_second_time_installs_nothing(project: Path) -> None:
    make(project, "run")

    result, calls = make(project, "run")

    assert result.returncode == 0, result.stderr
    assert [call for call in calls if " -c " not in call] == ["host-bridge connect --list ."]  # -c: version check


def test_make_run_rebuilds_a_venv_made_by_a_python_older_than_3_11_and_says_so(project: Path) -> None:
    script(project / ".venv" / "bin" / "python", OLD_PYTHON)
    (project / ".venv" / ".installed-runtime").touch()  # installed, but for the wrong Python

    result, calls = make(project, "run")

    assert result.returncode == 0, result.stderr
    assert (
        ".venv was made by Python 3.10.12; host_bridge needs Python 3.11 or newer: rebuilding it with" in result.stdout
    )
    assert any(call.endswith("python3 -m venv .venv") for call in calls), calls
    assert "venv-python -m pip install --disable-pip-version-check --progress-bar on -e ." in calls
    assert calls[-1] == "host-bridge connect --list ."
    assert (project / ".venv" / "bin" / "python").read_text() != OLD_PYTHON


def test_make_run_with_a_python_older_than_3_11_stops_and_names_the_fix(project: Path) -> None:
    result, calls = make(project, "run", python="old-python")

    assert result.returncode != 0
    assert "host_bridge needs Python 3.11 or newer, and" in result.stderr
    assert "is Python 3.10.12; run make PYTHON=python3.12" in result.stderr
    assert not any(" -m venv " in call for call in calls), calls


def test_make_test_still_installs_the_test_and_dev_extras_and_the_node_packages(project: Path) -> None:
    result, _ = make(project, "-n", "test")

    assert result.returncode == 0, result.stderr
    assert "pip install --quiet -e '.[test,dev]'" in result.stdout
    assert "cd tests/peers && npm ci" in result.stdout
    assert "cd vscode-extension && npm ci" in result.stdout
