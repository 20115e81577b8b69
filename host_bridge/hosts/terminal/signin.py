"""Sign-ins on the terminal: the address printed on stderr, opened in the browser where there is one.

The loopback redirect (:mod:`host_bridge.auth.loopback`) completes the sign-in, so nothing is typed back: the user
signs in in the browser, the browser comes back to ``127.0.0.1``, and ``connect`` goes on. Without a display the
address is only printed (open it on a machine whose browser can reach this one's loopback, e.g. through an SSH
port forward of the port it names). ``BROWSER`` (Python's :mod:`webbrowser` convention) names the browser to run.
"""

from __future__ import annotations

import logging
import os
import sys
import webbrowser

import anyio.to_thread

from host_bridge.auth.flow import SignInRequest
from host_bridge.auth.urls import check_browser_url
from host_bridge.hosts.terminal.output import Terminal
from host_bridge.text import visible

logger = logging.getLogger(__name__)


def can_open_browser() -> bool:
    """Whether a browser can be opened here: ``BROWSER`` is set, a desktop (macOS, Windows) or a display (X11,
    Wayland). Without one, :mod:`webbrowser` would start a text browser in this very terminal."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class TerminalSignIn:
    """Puts a sign-in to the person at the terminal (the core's ``SignInPrompt``)."""

    def __init__(self, terminal: Terminal, *, open_browser: bool | None = None, on_terminal: bool = False) -> None:
        self._terminal = terminal
        self._open_browser = can_open_browser() if open_browser is None else open_browser
        self.attended = on_terminal
        """Someone can act on a sign-in: ``connect`` runs on a terminal, or a browser was opened (``connect`` then
        waits for the sign-in beyond ``--timeout``; otherwise it gives up at ``--timeout``)."""

    async def sign_in(self, request: SignInRequest) -> bool:
        """Print the address, open it where a browser can be; the sign-in then waits for the browser."""
        url = check_browser_url(request.url)
        name = f"[{request.server_id}]"
        self._terminal.warn(f"{name} {visible(request.label)} needs you to sign in; open this address in a browser:")
        self._terminal.warn(f"  {url}")
        if self._open_browser and await anyio.to_thread.run_sync(_open, url):
            self.attended = True
            self._terminal.warn(f"{name} opened it in your browser; waiting for you to sign in there…")
        else:
            self._terminal.warn(f"{name} waiting for you to sign in there (the page then comes back to this machine)…")
        return True


def _open(url: str) -> bool:
    try:
        return webbrowser.open(url, new=2)
    except webbrowser.Error as error:
        logger.info("could not open a browser: %s", error)
        return False
