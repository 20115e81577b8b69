"""What each platform can enforce, the Landlock rights per ABI version, and the runner's command line errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from host_bridge.sandbox import landlock
from host_bridge.sandbox.support import WINDOWS_SENTENCE, mechanism_for, supported


def test_windows_is_not_enforced_in_a_plain_sentence() -> None:
    assert supported("win32") == (False, WINDOWS_SENTENCE)
    assert "not enforced on Windows" in WINDOWS_SENTENCE
    assert mechanism_for("win32") == "none"


def test_each_platform_has_its_mechanism() -> None:
    assert mechanism_for("linux") == "landlock"
    assert mechanism_for("darwin") == "sandbox-exec"
    assert mechanism_for("freebsd14") == "none"
    ok, reason = supported("freebsd14")
    assert not ok and "no sandbox for freebsd14" in reason


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")
def test_on_linux_support_follows_the_kernels_landlock_abi() -> None:
    ok, reason = supported()
    abi = landlock.landlock_abi()
    assert ok == (abi >= 1)
    assert (f"Landlock (ABI {abi})" in reason) if ok else ("not enforced" in reason)
    assert (landlock.unsupported_reason() is None) == ok


def test_each_abi_handles_the_file_rights_it_introduced() -> None:
    assert landlock.handled_rights(0) == 0
    assert landlock.handled_rights(1) == (1 << 13) - 1
    assert landlock.handled_rights(2) & landlock.ACCESS_FS_REFER
    assert not landlock.handled_rights(2) & landlock.ACCESS_FS_TRUNCATE
    assert landlock.handled_rights(3) & landlock.ACCESS_FS_TRUNCATE
    assert not landlock.handled_rights(4) & landlock.ACCESS_FS_IOCTL_DEV
    assert landlock.handled_rights(5) & landlock.ACCESS_FS_IOCTL_DEV
    assert landlock.handled_rights(7) == landlock.handled_rights(5) == (1 << 16) - 1


def run_runner(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host_bridge.sandbox.run", *args], capture_output=True, text=True, check=False
    )


def test_the_runner_refuses_a_bad_command_line_or_policy_with_status_2() -> None:
    missing = run_runner('{"enforced": false}', "/bin/true")
    assert missing.returncode == 2 and "expected a policy, '--' and a command" in missing.stderr
    bad = run_runner("not json", "--", "/bin/true")
    assert bad.returncode == 2 and "the policy is not usable" in bad.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="exec")
def test_the_runner_runs_the_command_in_its_place_when_the_policy_is_not_enforced() -> None:
    done = run_runner('{"enforced": false}', "--", sys.executable, "-c", "print('ran')")
    assert done.returncode == 0 and done.stdout == "ran\n"
    gone = run_runner('{"enforced": false}', "--", "/no/such/server")
    assert gone.returncode == 127 and "not found" in gone.stderr
