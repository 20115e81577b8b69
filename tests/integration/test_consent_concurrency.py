"""The consent store shared by real processes: concurrent grants and kill -9 while saving (B3, B4)."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.schema import FORMAT_VERSION, ConsentFile
from host_bridge.consent.store import ConsentStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and pipes")

WORKER = Path(__file__).parent / "helpers" / "consent_worker.py"
SERVER = ServerIdentity(source="settings", server_id="worker", fingerprint="sha256:" + "c" * 64)
LINE_TIMEOUT = 60.0


class Worker:
    """A helper process whose stdout lines the test waits for, each within a bounded time."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._buffer = b""

    def line(self, timeout: float = LINE_TIMEOUT) -> str:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no line from the worker within {timeout} s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise EOFError(f"the worker exited: {self.stderr()}")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        assert self.process.wait(timeout=LINE_TIMEOUT) == -signal.SIGKILL

    def stderr(self) -> str:
        assert self.process.stderr is not None
        try:
            self.process.wait(timeout=LINE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return "(still running)"
        return self.process.stderr.read().decode(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=LINE_TIMEOUT)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.close()


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    return tmp_path / "state"


def granted_paths(storage: Path) -> set[str]:
    document = ConsentFile.model_validate_json((storage / "consent.json").read_bytes())
    return {r.path for r in document.roots if r.decision == "allow"}


def lock_is_held(storage: Path) -> bool:
    fd = os.open(storage / "consent.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.mark.slow
@pytest.mark.requirement("B3")
def test_eight_processes_granting_at_once_lose_nothing(storage: Path, workers: list[Worker]) -> None:
    count, processes = 100, 8
    for n in range(processes):
        workers.append(Worker("grant", str(storage), str(n), str(count)))
    for worker in workers:
        assert worker.line() == "READY"

    for worker in workers:
        worker.send("GO")
    for worker in workers:
        lines = [worker.line() for _ in range(count + 1)]
        assert lines[-1] == "DONE"
        assert worker.process.wait(timeout=LINE_TIMEOUT) == 0

    expected = {f"/w{n}/p{i}" for n in range(processes) for i in range(count)}
    assert granted_paths(storage) == expected
    store = ConsentStore(storage)
    store.load()
    assert len(store.roots()) == processes * count
    assert not list(storage.glob("*.tmp-*"))


def save_two_grants(storage: Path) -> tuple[bytes, bytes]:
    store = ConsentStore(storage)
    store.load()
    store.set_root(SERVER, "/old/one", "allow")
    store.set_root(SERVER, "/old/two", "allow")
    return store.file_path.read_bytes(), store.backup_path.read_bytes()


@pytest.mark.requirement("B4")
def test_a_writer_killed_between_write_and_rename_leaves_the_old_file(storage: Path, workers: list[Worker]) -> None:
    old, old_backup = save_two_grants(storage)
    worker = Worker("pause", str(storage), "/new", "written")
    workers.append(worker)

    label, temp = worker.line().split(" ", 1)
    assert label == "WRITTEN"
    assert "/new" in {r.path for r in ConsentFile.model_validate_json(Path(temp).read_bytes()).roots}
    assert lock_is_held(storage)
    worker.kill()

    assert (storage / "consent.json").read_bytes() == old
    assert (storage / "consent.json.bak").read_bytes() == old_backup
    ConsentFile.model_validate_json(old_backup)
    assert not lock_is_held(storage)
    store = ConsentStore(storage)
    store.load()
    store.set_root(SERVER, "/after", "allow")
    assert granted_paths(storage) == {"/old/one", "/old/two", "/after"}
    assert not Path(temp).exists()


@pytest.mark.requirement("B4")
def test_a_writer_killed_after_the_rename_leaves_the_new_file_and_a_valid_backup(
    storage: Path, workers: list[Worker]
) -> None:
    old, _ = save_two_grants(storage)
    worker = Worker("pause", str(storage), "/new", "committed")
    workers.append(worker)

    assert worker.line().startswith("WRITTEN ")
    assert worker.line() == "COMMITTED"
    worker.kill()

    assert granted_paths(storage) == {"/old/one", "/old/two", "/new"}
    assert (storage / "consent.json.bak").read_bytes() == old
    store = ConsentStore(storage)
    store.load()
    store.set_root(SERVER, "/after", "allow")
    assert granted_paths(storage) == {"/old/one", "/old/two", "/new", "/after"}


@pytest.mark.requirement("B3", "B4")
def test_a_writer_killed_mid_stream_leaves_a_valid_file_with_every_acknowledged_grant(
    storage: Path, workers: list[Worker]
) -> None:
    worker = Worker("grant", str(storage), "0", "1000")
    workers.append(worker)
    assert worker.line() == "READY"
    worker.send("GO")
    acknowledged = {f"/w0/p{worker.line().split()[1]}" for _ in range(30)}

    worker.kill()

    saved = granted_paths(storage)
    assert acknowledged <= saved
    assert json.loads((storage / "consent.json.bak").read_bytes())["version"] == FORMAT_VERSION
    store = ConsentStore(storage)
    store.load()
    assert store.problem is None
