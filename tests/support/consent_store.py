"""The consent store as another window sees it."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def lock_held(storage: Path) -> Iterator[None]:
    """Hold the store's lock as a stuck window would (its own open file description)."""
    storage.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(storage / "consent.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
