"""The sandbox policy computed for a launch: system paths, the server's runtime, caches, consent, and what is left out.

Runtimes are laid out in ``tmp_path`` as real files (install prefixes, virtual environments, ``#!`` scripts,
``node_modules``), so the policy is computed from the file system as it will be for a real server.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from host_bridge.sandbox.landlock import READ_EXECUTE, READ_WRITE, Rule
from host_bridge.sandbox.policy import SandboxPolicy, make_private_tmp, policy_for_launch
from host_bridge.sandbox.rules import plan_from_wire
from host_bridge.sandbox.support import WINDOWS_SENTENCE

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX runtimes and paths")


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path.resolve()


@pytest.fixture
def home(base: Path) -> Path:
    folder = base / "home"
    (folder / ".ssh").mkdir(parents=True)
    return folder


def make_file(path: Path, text: str = "", executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(0o755)
    return path


def compute(executable: Path | str, *args: str, home: Path, **kwargs: object) -> SandboxPolicy:
    options: dict[str, object] = {
        "cwd": kwargs.pop("cwd", None),
        "env": kwargs.pop("env", {"PATH": os.defpath, "HOME": str(home)}),
        "shared_folders": kwargs.pop("shared_folders", ()),
        "private_tmp": kwargs.pop("private_tmp", None),
        "platform": kwargs.pop("platform", "linux"),
    }
    return policy_for_launch(executable, list(args), home=home, **options, **kwargs)  # type: ignore[arg-type]


def readable(policy: SandboxPolicy) -> list[str]:
    return [grant.path for grant in policy.read_execute]


def writable(policy: SandboxPolicy) -> list[str]:
    return [grant.path for grant in policy.read_write]


@posix_only
@pytest.mark.requirement("I6")
def test_system_paths_are_read_only_and_no_terminal_or_shared_memory_of_the_user_is_granted(home: Path) -> None:
    policy = compute("/bin/sh", home=home)
    assert {"/usr", "/etc", "/proc/self", "/proc/cpuinfo", "/sys"} <= set(readable(policy))
    assert "/proc" not in readable(policy), "other processes' files under /proc stay closed"
    assert "/opt" not in readable(policy)
    assert {"/dev/null", "/dev/urandom"} <= set(writable(policy))
    granted = set(readable(policy)) | set(writable(policy))
    assert not granted & {"/dev/tty", "/dev/pts", "/dev/ptmx", "/dev/shm", "/dev"}


@posix_only
def test_an_executable_in_a_prefix_gets_the_prefix_read_only(base: Path, home: Path) -> None:
    node = make_file(base / "opt" / "node-22" / "bin" / "node", executable=True)
    policy = compute(node, home=home)
    assert str(base / "opt" / "node-22") in readable(policy)
    assert not any(path.startswith(str(home)) for path in readable(policy) + writable(policy))


@posix_only
def test_a_virtual_environment_grants_itself_and_its_base_interpreters_prefix(base: Path, home: Path) -> None:
    python = make_file(base / "pythons" / "3.12" / "bin" / "python3.12", executable=True)
    venv = base / "project" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(python)
    make_file(venv / "pyvenv.cfg", f"home = {python.parent}\nversion = 3.12.0\n")
    policy = compute(venv / "bin" / "python", "-m", "some_server", home=home)
    assert str(venv) in readable(policy)
    assert str(base / "pythons" / "3.12") in readable(policy)
    assert str(base / "project") not in readable(policy), "a -m module is not a file; the project stays closed"


@posix_only
def test_a_scripts_interpreter_is_found_on_the_servers_path(base: Path, home: Path) -> None:
    node = make_file(base / "runtimes" / "node" / "bin" / "node", executable=True)
    tool = make_file(base / "tools" / "bin" / "mcp-tool", "#!/usr/bin/env node\n", executable=True)
    policy = compute(tool, home=home, env={"PATH": f"{node.parent}:/usr/bin", "HOME": str(home)})
    assert {str(base / "tools"), str(base / "runtimes" / "node")} <= set(readable(policy))


@posix_only
def test_a_bare_executable_name_is_looked_up_on_the_servers_path(base: Path, home: Path) -> None:
    node = make_file(base / "runtimes" / "node" / "bin" / "node", executable=True)
    policy = compute("node", home=home, env={"PATH": str(node.parent), "HOME": str(home)})
    assert str(base / "runtimes" / "node") in readable(policy)


@posix_only
def test_a_program_inside_node_modules_grants_the_outermost_node_modules(base: Path, home: Path) -> None:
    modules = base / "peers" / "node_modules"
    entry = make_file(modules / "@scope" / "server" / "dist" / "index.js", "//")
    make_file(modules / "@scope" / "server" / "package.json", "{}")
    policy = compute("/usr/bin/node", str(entry), "--root", str(base / "data"), home=home)
    assert str(modules) in readable(policy)
    assert str(base / "data") not in readable(policy)


@posix_only
def test_a_program_file_grants_its_package_root_below_home(home: Path) -> None:
    project = home / "tools" / "my-server"
    make_file(project / "pyproject.toml", "[project]\n")
    script = make_file(project / "src" / "my_server" / "main.py", "")
    policy = compute("/usr/bin/python3", str(script), home=home)
    assert str(project) in readable(policy)


@posix_only
def test_no_runtime_grant_is_ever_the_home_folder_or_above_it(home: Path) -> None:
    script = make_file(home / "server.py", "")
    binary = make_file(home / "bin" / "server", executable=True)
    local = make_file(home / ".local" / "bin" / "tool", executable=True)
    for executable, args in [("/usr/bin/python3", [str(script)]), (str(binary), []), (str(local), [])]:
        policy = compute(executable, *args, home=home)
        granted = readable(policy) + writable(policy)
        assert str(home) not in granted and str(home / ".local") not in granted
        assert not any(str(home).startswith(path + "/") for path in granted)
    assert str(script) in readable(compute("/usr/bin/python3", str(script), home=home)), "the file alone"
    assert str(binary) in readable(compute(binary, home=home))


@posix_only
def test_data_files_in_the_arguments_are_not_granted(home: Path) -> None:
    credentials = make_file(home / ".aws" / "credentials", "secret")
    config = make_file(home / "notes" / "config.json", "{}")
    policy = compute("/usr/bin/node", "--config", str(config), f"--creds={credentials}", home=home)
    granted = readable(policy) + writable(policy)
    assert not any(path.startswith(str(home)) for path in granted)


@posix_only
def test_consented_folders_and_the_private_temp_folder_are_read_write(base: Path, home: Path) -> None:
    shared = base / "work" / "webapp"
    shared.mkdir(parents=True)
    tmp = make_private_tmp("my server/1", parent=base)
    policy = compute("/bin/sh", home=home, shared_folders=[shared], private_tmp=tmp)
    assert writable(policy)[:2] == [str(shared), str(tmp)]
    assert tmp.name.startswith("host-bridge-my-server-1-") and (tmp.stat().st_mode & 0o777) == 0o700
    assert policy.environment({"PATH": "/usr/bin"}) == {
        "PATH": "/usr/bin",
        "TMPDIR": str(tmp),
        "TMP": str(tmp),
        "TEMP": str(tmp),
    }
    assert policy.allows(shared / "src" / "a.py", write=True)
    assert not policy.allows(base / "work" / "billing")
    assert not policy.allows("/etc/hosts", write=True) and policy.allows("/etc/hosts")


@posix_only
def test_npx_gets_a_private_npm_cache_of_its_own_and_neither_the_users_cache_nor_the_npmrc(
    base: Path, home: Path
) -> None:
    make_file(home / ".npmrc", "//registry.example/:_authToken=secret\n")
    (home / ".npm" / "_npx").mkdir(parents=True)
    npx = make_file(home.parent / "node" / "bin" / "npx", "#!/bin/sh\n", executable=True)
    private = base / "runners" / "fs-1"
    policy = compute(npx, "-y", "@modelcontextprotocol/server-filesystem", home=home, runner_home=private)
    caches = [g for g in policy.read_write if g.kind == "cache"]
    assert [g.path for g in caches] == [str(private / "npm")] and all(g.create for g in caches)
    assert policy.environment({})["npm_config_cache"] == str(private / "npm")
    assert policy.runners == ("npm",)
    assert not policy.allows(home / ".npm" / "_npx", write=True) and not policy.allows(home / ".npm" / "_npx")
    assert not policy.allows(home / ".npmrc")
    assert any(".npmrc" in warning and "registry tokens" in warning for warning in policy.warnings)


@posix_only
@pytest.mark.requirement("I4")
def test_a_cache_variable_in_the_servers_entry_never_becomes_a_grant_and_is_replaced_with_the_user_told(
    base: Path, home: Path
) -> None:
    secrets = home / ".ssh"
    for runner, variable in [("npx", "npm_config_cache"), ("uvx", "UV_CACHE_DIR"), ("pipx", "PIPX_HOME")]:
        program = make_file(base / "tools" / "bin" / runner, executable=True)
        entry = {variable: str(secrets)}
        env = {"PATH": os.defpath, "HOME": str(home), **entry}
        policy = compute(program, "some-server", home=home, env=env, entry_env=entry, runner_home=base / "private")
        assert not policy.allows(secrets) and not policy.allows(secrets, write=True), runner
        assert policy.environment(env)[variable].startswith(str(base / "private")), runner
        assert any(f"{variable}={secrets}" in warning for warning in policy.warnings), policy.warnings


@posix_only
@pytest.mark.requirement("I5")
def test_uvx_and_pipx_write_only_their_private_folders_never_the_users_tools(base: Path, home: Path) -> None:
    share = home / ".local" / "share"
    for folder in (share / "uv" / "tools" / "ruff", share / "uv" / "python" / "cpython-3.12", share / "pipx" / "venvs"):
        folder.mkdir(parents=True)
    private = base / "private"
    uvx = make_file(base / "uv" / "bin" / "uvx", executable=True)
    policy = compute(uvx, "mcp-server-git", home=home, runner_home=private)
    assert {g.path for g in policy.read_write if g.kind == "cache"} == {
        str(private / name) for name in ("uv-cache", "uv-tools", "uv-bin")
    }
    assert not policy.allows(share / "uv" / "tools" / "ruff", write=True)
    assert policy.allows(share / "uv" / "python" / "cpython-3.12") and not policy.allows(
        share / "uv" / "python", write=True
    ), "Pythons uv installed are read, never written"
    pipx = make_file(base / "pipx-env" / "bin" / "pipx", executable=True)
    policy = compute(pipx, "run", "mcp-server-time", home=home, runner_home=private)
    assert not policy.allows(share / "pipx" / "venvs", write=True)
    assert policy.environment({})["PIPX_HOME"] == str(private / "pipx")


@posix_only
def test_a_pyenv_shim_grants_the_pyenv_root(home: Path) -> None:
    shim = make_file(home / ".pyenv" / "shims" / "python3", "#!/usr/bin/env bash\n", executable=True)
    make_file(home / ".pyenv" / "versions" / "3.12.1" / "bin" / "python3.12", executable=True)
    policy = compute(shim, home=home)
    assert str(home / ".pyenv") in readable(policy)


@posix_only
def test_host_bridges_own_interpreter_grants_its_environment(home: Path) -> None:
    policy = compute(sys.executable, home=home)
    assert os.path.realpath(sys.prefix) in readable(policy) or any(
        os.path.realpath(sys.prefix).startswith(path + "/") for path in readable(policy)
    )


@posix_only
def test_sharing_the_home_folder_and_runtime_paths_over_unshared_folders_are_warned_about(
    base: Path, home: Path
) -> None:
    project = base / "work" / "webapp"
    make_file(project / "package.json", "{}")
    script = make_file(project / "tools" / "server.js", "")
    policy = compute("/usr/bin/node", str(script), home=home, shared_folders=[home], workspace_folders=[project])
    assert any("whole home folder" in warning for warning in policy.warnings)
    assert any(str(project) in warning and "not shared" in warning for warning in policy.warnings)


@posix_only
def test_paths_the_user_allowed_read_only_are_added_as_such(base: Path, home: Path) -> None:
    extra = base / "reference-data"
    extra.mkdir()
    policy = compute("/bin/sh", home=home, allowed_read=[extra])
    assert str(extra) in readable(policy) and not policy.allows(extra, write=True)


def test_windows_is_not_enforced_and_says_so(home: Path) -> None:
    policy = compute("C:/node/node.exe", home=home, platform="win32")
    assert not policy.enforced and policy.mechanism == "none"
    assert policy.summary == WINDOWS_SENTENCE
    assert "not enforced on Windows" in policy.summary


@posix_only
def test_the_off_setting_is_not_enforced_and_says_so(home: Path) -> None:
    policy = compute("/bin/sh", home=home, enforce=False)
    assert not policy.enforced and policy.requested is False and policy.mechanism == "none"
    assert "off for this server" in policy.summary
    assert policy.allows("/anything/at/all", write=True)


@posix_only
def test_a_macos_policy_has_macos_system_paths(home: Path) -> None:
    policy = compute("/bin/sh", home=home, platform="darwin")
    assert "/System" in readable(policy) or not os.path.exists("/System")
    assert "/dev/null" in writable(policy)
    if sys.platform != "darwin":
        assert not policy.enforced, "sandbox-exec is only probed on the Mac that runs the server"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Landlock")
def test_the_summary_names_the_mechanism_the_shared_folders_and_the_home_folder(base: Path, home: Path) -> None:
    shared = base / "webapp"
    shared.mkdir()
    policy = policy_for_launch("/bin/sh", [], cwd=None, env={}, shared_folders=[shared], home=home, private_tmp=base)
    if not policy.enforced:
        pytest.skip(policy.summary)
    assert policy.summary.startswith(f"Linux Landlock (ABI {policy.abi}) confines this server")
    assert str(shared) in policy.summary and f"the rest of {home} included, is refused" in policy.summary


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Landlock")
@pytest.mark.parametrize("count", [0, 1, 2])
def test_the_summary_reads_as_english_for_no_one_and_several_shared_folders(base: Path, home: Path, count: int) -> None:
    shared = [base / name for name in ("webapp", "api")[:count]]
    for folder in shared:
        folder.mkdir()
    policy = policy_for_launch("/bin/sh", [], cwd=None, env={}, shared_folders=shared, home=home, private_tmp=base)
    if not policy.enforced:
        pytest.skip(policy.summary)
    expected = {
        0: "it can write only its private temp folder (no folder is shared with it)",
        1: f"it can write only the folder you shared, {base / 'webapp'}, and its private temp folder",
        2: "it can write only the 2 folders you shared, ",
    }[count]
    assert expected in policy.summary
    assert "only no" not in policy.summary


@posix_only
def test_the_wire_form_gives_the_runner_the_same_rules(base: Path, home: Path) -> None:
    shared = base / "webapp"
    shared.mkdir()
    policy = compute("/bin/sh", home=home, shared_folders=[shared]).model_copy(
        update={"enforced": True, "mechanism": "landlock", "abi": 3}
    )
    plan = plan_from_wire(json.loads(policy.to_json()))
    assert plan is not None and plan.abi == 3
    assert Rule(str(shared), READ_WRITE) in plan.rules
    assert Rule("/usr", READ_EXECUTE) in plan.rules


def test_a_policy_in_wire_form_that_is_not_a_policy_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="no boolean 'enforced'"):
        plan_from_wire({})
    with pytest.raises(ValueError, match="absolute 'path'"):
        plan_from_wire({"enforced": True, "mechanism": "landlock", "readWrite": [{"path": "relative"}]})
    assert plan_from_wire({"enforced": False}) is None
