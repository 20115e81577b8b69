"""The servers of running sidecars, as ``host-bridge consent`` reads them: published, read back, withdrawn; the files of
processes that are gone are skipped; handles are short and stable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from host_bridge.consent.identity import ServerIdentity
from host_bridge.hub.running import (
    RunningServer,
    RunningSidecar,
    publish,
    record_handle,
    running_sidecars,
    server_handle,
    withdraw,
)

FS = ServerIdentity(source="settings", server_id="fs", fingerprint="sha256:" + "a" * 64)


def sidecar(pid: int) -> RunningSidecar:
    server = RunningServer(id="fs", identity=FS, state="running", workspace_defined=False)
    return RunningSidecar(pid=pid, folders=("/home/me/acme",), servers=(server,))


def test_a_published_sidecar_is_read_back_in_a_private_file_until_it_is_withdrawn(tmp_path: Path) -> None:
    publish(tmp_path, sidecar(os.getpid()))
    file = tmp_path / "sidecars" / f"{os.getpid()}.json"

    assert running_sidecars(tmp_path) == [sidecar(os.getpid())]
    assert file.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "sidecars").stat().st_mode & 0o777 == 0o700
    withdraw(tmp_path, os.getpid())
    assert running_sidecars(tmp_path) == []


def test_the_file_of_a_sidecar_that_is_gone_is_skipped(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    publish(tmp_path, sidecar(int(gone.stdout)))

    assert running_sidecars(tmp_path) == []


def test_handles_are_short_stable_and_differ_per_server_and_per_folder() -> None:
    other = FS.model_copy(update={"fingerprint": "sha256:" + "b" * 64})

    assert server_handle(FS) == server_handle(FS.model_copy()) and len(server_handle(FS)) == 7
    assert server_handle(FS) != server_handle(other)
    assert record_handle(FS, "/a") != record_handle(FS, "/b") != record_handle(other, "/b")
