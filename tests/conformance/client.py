"""The MCP conformance suite's client under test: ``host-bridge connect`` against the suite's server.

The suite runs ``python client.py <server URL>`` with ``MCP_CONFORMANCE_SCENARIO`` naming the scenario (and
``MCP_CONFORMANCE_CONTEXT`` holding its JSON context, e.g. a pre-registered client). This script writes the server
into an ``mcp.json`` as a user would (with the context's client ID and secret in its ``"oauth"`` settings, the secret
through ``${env:…}``), then runs ``host-bridge connect`` with a fresh storage folder: the initialize scenario only
connects; ``tools_call`` calls ``add_numbers``; the auth scenarios list the tools and call ``test-tool``, which is
what their servers guard. ``BROWSER`` is ``browser.py``, which plays a person who opens the sign-in address and
approves (the suite's authorization server redirects back at once), so the sign-in returns through host_bridge's
loopback redirect exactly as from a real browser.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's CIMD scenario expects a client to use."""


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    env = {**os.environ, "BROWSER": str(HERE / "browser.py")}
    env.pop("DISPLAY", None)
    env["HOST_BRIDGE_NO_KEYRING"] = "1"
    with tempfile.TemporaryDirectory(prefix="hb-conformance-") as work:
        oauth: dict[str, object] = {"clientMetadataUrl": CIMD_URL}
        if context.get("client_id"):
            oauth["clientId"] = context["client_id"]
        if context.get("client_secret"):
            env["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
            oauth["clientSecret"] = "${env:CONFORMANCE_CLIENT_SECRET}"
        config = Path(work, "mcp.json")
        config.write_text(json.dumps({"servers": {"conformance": {"type": "http", "url": url, "oauth": oauth}}}))
        verbose = ["-v"] if os.environ.get("HOST_BRIDGE_CONFORMANCE_VERBOSE") else []
        command = [
            sys.executable,
            "-m",
            "host_bridge",
            *verbose,
            "connect",
            "--config",
            str(config),
            "--storage-dir",
            str(Path(work, "storage")),
            "--timeout",
            "20",
            work,
        ]
        if scenario == "tools_call":
            command += ["--call", "add_numbers", "--arguments", json.dumps({"a": 5, "b": 3})]
        elif scenario.startswith("auth/"):
            command += ["--tools", "--call", "test-tool"]
        return subprocess.run(command, env=env, stdin=subprocess.DEVNULL, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
