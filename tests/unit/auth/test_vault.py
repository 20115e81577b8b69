"""Where sign-in tokens are kept: a private file the sandbox never grants, or the OS keyring (docs/security.md D6)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from host_bridge.auth.vault import TOKENS_FILE, FallbackVault, FileVault, VaultError
from host_bridge.sandbox.policy import policy_for_launch

pytestmark = [pytest.mark.anyio, pytest.mark.requirement("D6")]


async def test_the_token_file_is_created_private_and_keeps_one_secret_per_identity(tmp_path: Path) -> None:
    vault = FileVault(tmp_path / "storage")
    await vault.put("identity:a", "one")
    await vault.put("identity:b", "two")
    assert await vault.get("identity:a") == "one"
    assert (tmp_path / "storage" / TOKENS_FILE).stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "storage").stat().st_mode & 0o777 == 0o700
    assert await vault.delete("identity:a")
    assert not await vault.delete("identity:a")
    assert await vault.get("identity:a") is None
    assert await vault.get("identity:b") == "two"


async def test_a_token_file_that_is_a_symlink_or_writable_by_others_is_refused(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    storage.mkdir(mode=0o700)
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text('{"format": 1, "secrets": {}}')
    (storage / TOKENS_FILE).symlink_to(elsewhere)
    with pytest.raises(VaultError, match="symbolic link"):
        await FileVault(storage).get("identity:a")
    (storage / TOKENS_FILE).unlink()
    (storage / TOKENS_FILE).write_text('{"format": 1, "secrets": {}}')
    os.chmod(storage / TOKENS_FILE, 0o666)
    with pytest.raises(VaultError, match="writable by other users"):
        await FileVault(storage).put("identity:a", "x")


async def test_a_keyring_that_fails_falls_back_to_the_file_for_good(tmp_path: Path) -> None:
    class Broken:
        description = "a broken keyring"

        async def get(self, key: str) -> str | None:
            raise VaultError("the OS keyring refused (no D-Bus session)")

        async def put(self, key: str, value: str) -> None:
            raise VaultError("the OS keyring refused (no D-Bus session)")

        async def delete(self, key: str) -> bool:
            raise VaultError("the OS keyring refused (no D-Bus session)")

    vault = FallbackVault(Broken(), FileVault(tmp_path))
    await vault.put("identity:a", "secret")
    assert await vault.get("identity:a") == "secret"
    assert vault.description == str(tmp_path / TOKENS_FILE)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
def test_no_grant_of_a_servers_default_sandbox_reaches_the_token_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    storage = home / ".local" / "share" / "host-bridge"
    project = home / "src" / "project"
    project.mkdir(parents=True)
    storage.mkdir(parents=True)
    (project / "server.py").write_text("print('hi')\n")
    token_file = storage / TOKENS_FILE
    policy = policy_for_launch(
        sys.executable,
        [str(project / "server.py")],
        cwd=project,
        env={"PATH": os.environ.get("PATH", "")},
        shared_folders=[project],
        home=home,
        private_tmp=tmp_path / "tmp",
        platform="linux",
    )
    for grant in (*policy.read_execute, *policy.read_write):
        assert not str(token_file).startswith(grant.path.rstrip("/") + "/"), grant
