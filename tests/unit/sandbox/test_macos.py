"""The macOS sandbox-exec profile generated from a policy (checked on its text; it can only run on a Mac)."""

from __future__ import annotations

from host_bridge.sandbox.macos import quote, sandbox_profile, wrap_command
from host_bridge.sandbox.policy import PathGrant, SandboxPolicy


def policy(read: list[str], write: list[str]) -> SandboxPolicy:
    return SandboxPolicy(
        enforced=True,
        requested=True,
        mechanism="sandbox-exec",
        read_execute=tuple(PathGrant(path=p, kind="system", why="") for p in read),
        read_write=tuple(PathGrant(path=p, kind="shared", why="") for p in write),
        summary="",
    )


def test_the_profile_denies_file_access_then_allows_the_policys_paths_after_it() -> None:
    text = sandbox_profile(policy(["/usr", "/opt/homebrew"], ["/Users/me/webapp", "/private/var/folders/x/T/hb"]))
    lines = text.splitlines()
    assert lines[0] == "(version 1)"
    assert "(allow default)" in lines
    deny = lines.index("(deny file-read* file-write* process-exec file-map-executable)")
    read = lines.index("(allow file-read* process-exec file-map-executable")
    write = lines.index("(allow file-read* file-write* process-exec file-map-executable")
    assert deny < read < write, "Seatbelt applies the last matching rule, so the allows come last"
    assert lines[read + 1 : read + 3] == ['  (subpath "/usr")', '  (subpath "/opt/homebrew")']
    assert lines[write + 1 : write + 3] == [
        '  (subpath "/Users/me/webapp")',
        '  (subpath "/private/var/folders/x/T/hb")',
    ]
    assert "(allow file-read-metadata)" in lines
    assert '"/Users/me"' not in text and "/Users/me/.ssh" not in text


def test_paths_with_quotes_and_backslashes_cannot_break_out_of_the_profile_string() -> None:
    assert quote('/Users/me/a "b"\\c') == '"/Users/me/a \\"b\\"\\\\c"'
    text = sandbox_profile(policy([], ['/Users/me/x") (allow file-read* (subpath "/']))
    assert '(subpath "/Users/me/x\\") (allow file-read* (subpath \\"/")' in text


def test_the_command_is_wrapped_in_sandbox_exec_with_the_profile() -> None:
    p = policy(["/usr"], [])
    command, args = wrap_command(p, "/opt/homebrew/bin/node", ["server.js", "--flag"])
    assert command == "/usr/bin/sandbox-exec"
    assert args == ["-p", sandbox_profile(p), "/opt/homebrew/bin/node", "server.js", "--flag"]
