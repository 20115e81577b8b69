"""The reaper: ends the process groups of MCP servers once the process that started them is gone.

Run as a script (``python -I -S _reaper.py``) by :mod:`host_bridge.hub.process_groups`, never imported. Its stdin is
a pipe whose only write end the sidecar holds: ``+PGID`` lines register a server's process group, ``-PGID`` lines
forget one. End of input means the sidecar exited, however it died (SIGKILL included: the kernel closes its
descriptors), so every group still registered gets SIGKILL and the reaper exits. It lives in a session of its own,
so a signal to the sidecar's process group or terminal does not end it first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


def main() -> None:
    """Read registrations until end of input, then SIGKILL every group still registered."""
    for ignored in (signal.SIGINT, signal.SIGHUP):
        signal.signal(ignored, signal.SIG_IGN)
    groups: set[int] = set()
    for line in sys.stdin.buffer:
        sign, number = line[:1], line[1:].strip()
        if not number.isdigit() or int(number) <= 1:
            continue
        if sign == b"+":
            groups.add(int(number))
        elif sign == b"-":
            groups.discard(int(number))
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


if __name__ == "__main__":
    main()
