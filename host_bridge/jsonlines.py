"""Append-only JSON-lines logs in the storage folder (the roots audit, the gateway's audit): private files in a
private folder, rotated to one old generation, never failing the work they record."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from host_bridge.private_files import UnsafeFileError, check_private_dir, open_private

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class JsonLinesLog:
    """JSON lines in ``path``, rotated to ``path + ".1"`` past ``max_bytes``; ``what`` names it in the log."""

    def __init__(self, path: str, *, max_bytes: int, what: str) -> None:
        self.path = path
        """The current log file."""
        self.max_bytes = max_bytes
        """Size at which the file is rotated (one old generation is kept)."""
        self._what = what
        self._lock = threading.Lock()
        self._failed = False

    def write(self, record: Mapping[str, Any]) -> None:
        """Append ``record``; a failure to write is logged once (until a write works again), never raised."""
        # Strings from other processes may hold lone surrogates (valid JSON escapes, no Unicode characters): written
        # as "?" rather than failing the record (and whatever it records).
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "replace")
        with self._lock:
            try:
                folder = Path(self.path).parent
                if not folder.exists():
                    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                # In a folder others can write to, the log could be another user's file or a link to one.
                check_private_dir(folder)
                if os.path.exists(self.path) and os.path.getsize(self.path) + len(line) > self.max_bytes:
                    os.replace(self.path, self.path + ".1")
                fd = open_private(Path(self.path), os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
                self._failed = False
            except (OSError, UnsafeFileError) as error:
                if not self._failed:
                    reason = error if isinstance(error, UnsafeFileError) else error.strerror or error
                    logger.error("the %s %s is not written: %s", self._what, self.path, reason)
                self._failed = True


def read_json_lines(path: str, parse: Callable[[str], _T]) -> Iterator[_T]:
    """The entries of ``path + ".1"`` then ``path``, oldest first, each through ``parse``; lines it rejects with
    ``ValueError`` are skipped (and logged)."""
    for name in (path + ".1", path):
        try:
            with open(name, encoding="utf-8") as handle:
                for line in handle:
                    try:
                        yield parse(line)
                    except ValueError:
                        logger.warning("skipped a damaged line in %s", name)
        except FileNotFoundError:
            continue
