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

import json
import sys
from datetime import UTC, datetime

from host_bridge.consent import files
from host_bridge.consent.identity import ServerIdentity
from host_bridge.consent.lock import FileLock
from host_bridge.consent.schema import RootRecord, document, parse
from host_bridge.consent.store import ConsentStore

SERVER = ServerIdentity(source="settings", server_id="worker", fingerprint="sha256:" + "c" * 64)
"""The server every worker grants for."""


def say(line: str) -> None:
    print(line, flush=True)


def grant(storage: str, worker: int, count: int) -> None:
    store = ConsentStore(storage)
    store.load()
    say("READY")
    if sys.stdin.readline().strip() != "GO":
        return
    for i in range(count):
        store.set_root(SERVER, f"/w{worker}/p{i}", "allow")
        say(f"GRANTED {i}")
    say("DONE")


def pause(storage: str, path: str, stage: str) -> None:
    store = ConsentStore(storage)
    with FileLock(store.lock_path):
        current = parse(store.file_path.read_bytes()).document if store.file_path.exists() else document((), ())
        record = RootRecord(
            source=SERVER.source,
            server_id=SERVER.server_id,
            fingerprint=SERVER.fingerprint,
            path=path,
            decision="allow",
            updated=datetime.now(UTC),
        )
        updated = document((*current.roots, record), current.trust)
        data = (json.dumps(updated.model_dump(mode="json", by_alias=True), indent=2) + "\n").encode()
        temp, _ = files.write_private_temp(store.file_path, data)
        say(f"WRITTEN {temp}")
        if stage == "committed":
            files.replace_keeping_backup(store.file_path, store.backup_path, temp)
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
