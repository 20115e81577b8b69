"""A command run as a user runs it: on a real pseudo-terminal of a given size, or with pipes, read with deadlines.

Nothing here sleeps to wait: :meth:`Transcript.expect` returns as soon as the text arrives and fails after its
deadline with everything read so far.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

WAIT = 60.0
"""Seconds a command may take to print what a test waits for."""


def host_bridge(*args: str) -> list[str]:
    """The ``host-bridge`` command line with ``args``, run with this interpreter."""
    return [sys.executable, "-m", "host_bridge", *args]


def environment(**changes: str | None) -> dict[str, str]:
    """This process's environment without a ``COLUMNS`` or ``LINES`` that would override the terminal's size, with
    ``changes`` applied (``None`` removes a variable)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


class Transcript:
    """What a process wrote to a pipe or terminal, read as it comes, waited on with a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.text = ""
        self._mark = 0
        self.closed = False

    def expect(self, needle: str, timeout: float = WAIT) -> str:
        """Wait for ``needle`` after the previous match; returns the text up to and including it."""
        deadline = time.monotonic() + timeout
        while (found := self.text.find(needle, self._mark)) < 0:
            if self.closed or not self._read(deadline - time.monotonic()):
                raise AssertionError(f"{needle!r} did not appear; the output was:\n{self.text}")
        start, self._mark = self._mark, found + len(needle)
        return self.text[start : self._mark]

    def drain(self, timeout: float = WAIT) -> str:
        """Read until the writer closes its end; returns everything."""
        deadline = time.monotonic() + timeout
        while not self.closed and self._read(deadline - time.monotonic()):
            pass
        return self.text

    def _read(self, remaining: float) -> bool:
        if remaining <= 0:
            return False
        ready, _, _ = select.select([self.fd], [], [], remaining)
        if not ready:
            return False
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # a terminal whose other side closed reads as EIO
            chunk = b""
        if not chunk:
            self.closed = True
        self.text += chunk.decode("utf-8", "replace")
        return True


class Terminal:
    """A process whose controlling terminal is a pseudo-terminal this test holds the other side of."""

    def __init__(self, process: subprocess.Popen[bytes], master: int) -> None:
        self.process = process
        self.master = master
        self.transcript = Transcript(master)

    def expect(self, needle: str, timeout: float = WAIT) -> str:
        """See :meth:`Transcript.expect`."""
        return self.transcript.expect(needle, timeout)

    def type(self, line: str) -> None:
        """Type ``line`` and Enter."""
        os.write(self.master, line.encode() + b"\r")

    def press_ctrl_c(self) -> None:
        """Ctrl-C as the terminal sends it: SIGINT to the foreground process group."""
        os.write(self.master, b"\x03")

    def wait(self, timeout: float = WAIT) -> int:
        """The exit code, once the process exited and closed the terminal; everything it wrote is read."""
        self.transcript.drain(timeout)
        try:
            return self.process.wait(timeout=max(1.0, timeout / 10))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the process did not exit; the output was:\n{self.transcript.text}") from None

    @property
    def text(self) -> str:
        """Everything read so far, with the terminal's CR LF line ends as LF."""
        return self.transcript.text.replace("\r\n", "\n")


@contextmanager
def on_terminal(
    argv: list[str],
    *,
    columns: int = 80,
    rows: int = 24,
    env: Mapping[str, str] | None = None,
    stdout: IO[Any] | int | None = None,
) -> Iterator[Terminal]:
    """Run ``argv`` with a new pseudo-terminal of ``columns`` × ``rows`` as its controlling terminal and as its
    stdin, stdout and stderr (``stdout`` may be a file instead); kill it if it is still running at the end."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def controlling_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # As a login shell leaves it: a test run started in the background (``make test &``) ignores SIGINT, and an
        # ignored signal stays ignored across exec, so Ctrl-C on this terminal would do nothing.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    try:
        process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave if stdout is None else stdout,
            stderr=slave,
            env=dict(env) if env is not None else environment(),
            start_new_session=True,
            preexec_fn=controlling_terminal,
        )
    finally:
        os.close(slave)
    terminal = Terminal(process, master)
    try:
        yield terminal
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        os.close(master)
