"""``host-bridge connect`` and ``host-bridge consent sign-out`` with an http server that needs a sign-in, as real
processes: the sign-in address printed and opened with ``$BROWSER``, the loopback redirect completing it, the kept
token reused by the next run, and asked for again after a sign-out.

``$BROWSER`` is ``tests/conformance/browser.py``: a person who opens the page and approves (``oauth_server.py``
redirects back at once).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.http_fixtures import fixture_process
from support.paths import REPO
from support.records import recorded
from support.terminal import WAIT, environment, host_bridge

pytestmark = pytest.mark.anyio

BROWSER = REPO / "tests" / "conformance" / "browser.py"


def run(*args: str, browser: bool = True) -> subprocess.CompletedProcess[str]:
    env = environment(BROWSER=str(BROWSER) if browser else None, DISPLAY=None, WAYLAND_DISPLAY=None)
    return subprocess.run(
        host_bridge(*args), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=WAIT, env=env, check=False
    )


async def test_connect_prints_the_sign_in_address_signs_in_through_the_browser_and_the_next_run_reuses_it(
    tmp_path: Path,
) -> None:
    record = tmp_path / "server.jsonl"
    storage = str(tmp_path / "storage")
    async with fixture_process("oauth_server", record) as fixture:
        server = f"docs=http://127.0.0.1:{fixture.port}/mcp"
        first = run("connect", "--server", server, "--storage-dir", storage, "--call", "whoami", str(tmp_path))
        assert first.returncode == 0, first.stderr
        assert "[docs] docs needs you to sign in; open this address in a browser:" in first.stderr
        assert f"  http://127.0.0.1:{fixture.port}/authorize?response_type=code" in first.stderr
        assert "[docs] signed in" in first.stderr
        assert first.stdout == "signed in\n"

        again = run("connect", "--server", server, "--storage-dir", storage, "--tools", str(tmp_path), browser=False)
        assert again.returncode == 0, again.stderr
        assert "needs you to sign in" not in again.stderr
        assert "whoami" in again.stdout

        out = run("consent", "sign-out", "--server", server, "--storage-dir", storage)
        assert out.returncode == 0 and "signed out" in out.stderr, out.stderr

        third = run(
            "connect", "--server", server, "--storage-dir", storage, "--timeout", "5", str(tmp_path), browser=False
        )
        assert "needs you to sign in" in third.stderr and third.returncode == 1
    assert len(recorded(record, "authorize")) == 1


async def test_a_server_that_needs_a_sign_in_says_so_with_the_action_instead_of_an_mcp_error(tmp_path: Path) -> None:
    record = tmp_path / "server.jsonl"
    async with fixture_process("oauth_server", record) as fixture:
        server = f"docs=http://127.0.0.1:{fixture.port}/mcp"
        result = run(
            "connect",
            "--server",
            server,
            "--storage-dir",
            str(tmp_path / "s"),
            "--timeout",
            "5",
            str(tmp_path),
            browser=False,
        )
    assert result.returncode == 1
    assert "MCPError" not in result.stderr
    assert "open this address in a browser" in result.stderr
    assert "[docs] could not be used: it needs you to sign in: open the address above in a browser" in result.stderr
