#!/usr/bin/env python3
"""A browser for the conformance suite's sign-ins: opens the address it is given and follows its redirects.

``host-bridge connect`` runs ``$BROWSER <url>`` (Python's ``webbrowser`` convention) for a sign-in. The suite's
authorization server approves at once and redirects to host_bridge's loopback listener, which is the end of the
sign-in. Only ``http`` and ``https`` addresses are fetched.
"""

from __future__ import annotations

import sys
import urllib.request
from urllib.parse import urlsplit


def main() -> int:
    url = sys.argv[1]
    if urlsplit(url).scheme not in ("http", "https"):
        print(f"browser.py: refusing to open {url!r}", file=sys.stderr)
        return 2
    with urllib.request.urlopen(url, timeout=30) as response:  # follows the redirect back to the loopback
        response.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
