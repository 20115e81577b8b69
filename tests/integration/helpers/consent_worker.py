"""A separate process that writes to the consent store, for tests/integration/test_consent_concurrency.py.

Commands (each line it prints is flushed at once, so the test can wait on it):

``grant STORAGE WORKER COUNT``
    Print ``READY``, wait for ``GO`` on stdin, save ``allow`` for ``/w<WORKER>/p<i>``, ``i < COUNT``,
    printing ``GRANTED <i>`` after each, then ``DONE``.
``pause STORAGE PATH STAGE``
    Save ``allow`` for ``PATH`` by hand, holding the store lock, and stop at ``STAGE``: ``written``
    (the new file is synced to its temporary name, not renamed) or ``committed`` (renamed into place).
    Print ``WRITTEN <temp path>`` (and ``COMMITTED``), then wait until killed or stdin closes.

The pause is a fault-injection point that only this script can reach: it drives the store's two save
steps itself, so the product code carries no test switch.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

from host_bridge.consent.lock import FileLock
from host_bridge.consent.store import ConsentFile, ConsentStore, RootRecord

SERVER = "sha256:" + "c" * 64
"""The fingerprint every worker grants for."""


def say(line: str) -> None:
    print(line, flush=True)


def grant(storage: str, worker: int, count: int) -> None:
    store = ConsentStore(storage)
    store.load()
    say("READY")
    if sys.stdin.readline().strip() != "GO":
        return
    for i in range(count):
        store.set_root(SERVER, f"/w{worker}/p{i}", "allow", server_id=f"worker-{worker}")
        say(f"GRANTED {i}")
    say("DONE")


def pause(storage: str, path: str, stage: str) -> None:
    store = ConsentStore(storage)
    with FileLock(store.lock_path):
        current, _ = store._read_locked()  # pyright: ignore[reportPrivateUsage]
        record = RootRecord(
            server=SERVER, path=path, decision="allow", server_id="pause", updated=datetime.now(UTC)
        )
        updated = ConsentFile(version=1, roots=(*current.roots, record), trust=current.trust)
        pending = store._write_temp(updated)  # pyright: ignore[reportPrivateUsage]
        say(f"WRITTEN {pending.temp_path}")
        if stage == "committed":
            store._commit(pending)  # pyright: ignore[reportPrivateUsage]
            say("COMMITTED")
        sys.stdin.read()


def main(argv: list[str]) -> None:
    command, storage, *rest = argv
    if command == "grant":
        grant(storage, int(rest[0]), int(rest[1]))
    elif command == "pause":
        pause(storage, rest[0], rest[1])
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
