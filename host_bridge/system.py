"""The operating system this process runs on, decided once for the whole package.

Code that only branches on the platform at run time uses these. A branch that decides which module is imported or
which function is defined (``msvcrt`` or ``fcntl``) keeps ``sys.platform`` written out, because that is the form
type checkers narrow on.
"""

from __future__ import annotations

import sys

IS_WINDOWS = sys.platform == "win32"
"""Windows: no process groups, POSIX modes or ``fsync`` of directories; drive letters in paths and URIs."""
IS_LINUX = sys.platform.startswith("linux")
"""Linux: ``/proc``, ``prctl`` (a parent-death signal for children)."""
