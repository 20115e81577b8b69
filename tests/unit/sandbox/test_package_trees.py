"""The grant for a program is the package tree it belongs to, found the way its launcher finds it, and never computed
from what the server or a repository can write (docs/security.md I3).

Each layout is made in ``tmp_path`` as the installer lays it out (the links npm makes in ``node_modules/.bin`` and in
a global prefix's ``bin``, a venv's ``python`` link and ``pyvenv.cfg``, ``~/.cargo/bin``), so the policy is computed
from the file system as it is for a real install; ``tests/compat`` starts the real packages.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from host_bridge.sandbox.policy import SandboxPolicy, policy_for_launch

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX layouts")


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path.resolve()


@pytest.fixture
def home(base: Path) -> Path:
    folder = base / "home"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_rsa").write_text("PRIVATE")
    return folder


def make_file(path: Path, text: str = "", executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(0o755)
    return path


def link(path: Path, target: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def compute(executable: Path | str, *args: str, home: Path, **kwargs: object) -> SandboxPolicy:
    options: dict[str, object] = {
        "cwd": kwargs.pop("cwd", None),
        "env": kwargs.pop("env", {"PATH": os.defpath, "HOME": str(home)}),
        "shared_folders": kwargs.pop("shared_folders", ()),
        "private_tmp": kwargs.pop("private_tmp", None),
        "platform": "linux",
    }
    return policy_for_launch(executable, list(args), home=home, **options, **kwargs)  # type: ignore[arg-type]


def node_package(modules: Path, name: str) -> Path:
    """``modules/@modelcontextprotocol/<name>`` with a ``dist/index.js`` that starts with ``#!/usr/bin/env node``."""
    package = modules / "@modelcontextprotocol" / name
    make_file(package / "package.json", '{"type": "module"}')
    return make_file(package / "dist" / "index.js", "#!/usr/bin/env node\n", executable=True)


def test_an_npm_bin_link_grants_the_outermost_node_modules_where_node_finds_the_dependencies(
    base: Path, home: Path
) -> None:
    tools = home / "mcp-tools"
    make_file(tools / "package.json", "{}")
    modules = tools / "node_modules"
    node_package(modules, "server-filesystem")
    sdk = make_file(modules / "@modelcontextprotocol" / "sdk" / "dist" / "esm" / "server" / "mcp.js")
    target = "../@modelcontextprotocol/server-filesystem/dist/index.js"
    bin_link = link(modules / ".bin" / "mcp-server-filesystem", target)
    policy = compute(bin_link, str(base / "data"), home=home)
    assert policy.allows(sdk), "Node resolves @modelcontextprotocol/sdk from the outermost node_modules"
    assert not policy.allows(tools / "package.json"), "the tools folder itself is not the package tree"
    assert not policy.allows(home / ".ssh" / "id_rsa")


def test_a_global_prefix_bin_link_grants_the_prefixs_node_modules_and_nothing_else_in_home(
    base: Path, home: Path
) -> None:
    prefix = home / ".npm-global"
    modules = prefix / "lib" / "node_modules"
    node_package(modules, "server-everything")
    nested = make_file(modules / "@modelcontextprotocol" / "server-everything" / "node_modules" / "zod" / "index.js")
    target = "../lib/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    executable = link(prefix / "bin" / "mcp-server-everything", target)
    make_file(prefix / "etc" / "npmrc", "//registry/:_authToken=secret")
    policy = compute(executable, home=home)
    assert policy.allows(nested)
    assert not policy.allows(prefix / "etc" / "npmrc")


def test_a_pnpm_store_link_grants_the_projects_node_modules(base: Path, home: Path) -> None:
    modules = base / "project" / "node_modules"
    store = modules / ".pnpm" / "@modelcontextprotocol+server-memory@1.0.0" / "node_modules"
    entry = node_package(store, "server-memory")
    link(modules / ".bin" / "mcp-server-memory", os.path.relpath(entry, modules / ".bin"))
    policy = compute(modules / ".bin" / "mcp-server-memory", home=home)
    assert policy.allows(store / "zod" / "index.js") and policy.allows(modules / "other")


def test_a_venv_console_script_and_python_dash_m_grant_the_venv_and_the_real_base_interpreter(
    base: Path, home: Path
) -> None:
    python = make_file(base / "pythons" / "3.12" / "bin" / "python3.12", executable=True)
    make_file(base / "pythons" / "3.12" / "lib" / "python3.12" / "os.py")
    venv = home / "venvs" / "time"
    link(venv / "bin" / "python", str(python))
    make_file(venv / "pyvenv.cfg", f"home = {python.parent}\n")
    site = make_file(venv / "lib" / "python3.12" / "site-packages" / "mcp_server_time" / "__init__.py")
    script = make_file(venv / "bin" / "mcp-server-time", f"#!{venv}/bin/python\n", executable=True)
    for policy in (compute(script, home=home), compute(venv / "bin" / "python", "-m", "mcp_server_time", home=home)):
        assert policy.allows(site)
        assert policy.allows(base / "pythons" / "3.12" / "lib" / "python3.12" / "os.py")
        assert not policy.allows(home / "venvs" / "other")


def test_pipx_and_uv_tool_links_grant_the_tools_own_venv_only(base: Path, home: Path) -> None:
    python = make_file(base / "pythons" / "3.12" / "bin" / "python3.12", executable=True)
    share = home / ".local" / "share"
    for tools, name in [(share / "pipx" / "venvs", "time"), (share / "uv" / "tools", "git")]:
        venv = tools / f"mcp-server-{name}"
        link(venv / "bin" / "python", str(python))
        make_file(venv / "pyvenv.cfg", f"home = {python.parent}\n")
        make_file(venv / "bin" / f"mcp-server-{name}", f"#!{venv}/bin/python\n", executable=True)
        link(home / ".local" / "bin" / f"mcp-server-{name}", str(venv / "bin" / f"mcp-server-{name}"))
        make_file(tools / "other-tool" / "bin" / "tool")
        policy = compute(home / ".local" / "bin" / f"mcp-server-{name}", home=home)
        assert policy.allows(venv / "pyvenv.cfg")
        assert not policy.allows(tools / "other-tool" / "bin" / "tool")
        assert not policy.allows(home / ".local" / "bin" / "other")


def test_a_single_binary_in_cargo_or_go_bin_gets_the_file_alone_not_the_credentials_beside_it(home: Path) -> None:
    credentials = make_file(home / ".cargo" / "credentials.toml", "token = 'secret'")
    for binary in (
        make_file(home / ".cargo" / "bin" / "mcp-server-rs", "\x7fELF", executable=True),
        make_file(home / "go" / "bin" / "mcp-server-go", "\x7fELF", executable=True),
    ):
        policy = compute(binary, home=home)
        assert policy.allows(binary)
        assert not policy.allows(credentials) and not policy.allows(binary.parent / "other")


def test_a_version_manager_shim_grants_its_root_and_nvm_grants_the_node_version(home: Path) -> None:
    for manager in (".pyenv", ".asdf", ".local/share/mise"):
        shim = make_file(home / manager / "shims" / "node", "#!/usr/bin/env bash\n", executable=True)
        assert compute(shim, home=home).allows(home / manager / "installs")
    node = make_file(home / ".nvm" / "versions" / "node" / "v22.1.0" / "bin" / "node", executable=True)
    policy = compute(node, home=home)
    assert policy.allows(home / ".nvm" / "versions" / "node" / "v22.1.0" / "lib" / "node_modules" / "npm")
    assert not policy.allows(home / ".nvm" / "versions" / "node" / "v20.0.0")


@pytest.mark.requirement("I3")
def test_a_pyvenv_cfg_home_never_points_the_policy_anywhere(base: Path, home: Path) -> None:
    python = make_file(base / "pythons" / "3.12" / "bin" / "python3.12", "interpreter", executable=True)
    shared = base / "work" / "webapp"
    venv = shared / ".venv"
    link(venv / "bin" / "python", str(python))
    for lines in (f"home = {home / '.ssh'}\n", f"home = {python.parent}\nhome = {home / '.ssh'}\n"):
        make_file(venv / "pyvenv.cfg", lines)
        policy = compute(venv / "bin" / "python", "-m", "server", home=home, shared_folders=[shared])
        assert not policy.allows(home / ".ssh" / "id_rsa"), lines
        assert policy.allows(base / "pythons" / "3.12" / "bin" / "python3.12"), "the real base interpreter"


@pytest.mark.requirement("I3")
def test_a_venv_of_copies_gets_a_base_home_only_where_the_same_interpreter_lies(base: Path, home: Path) -> None:
    python = make_file(base / "pythons" / "3.12" / "bin" / "python3", "interpreter bytes", executable=True)
    venv = base / "repo" / ".venv"
    copy = venv / "bin" / "python3"
    copy.parent.mkdir(parents=True)
    shutil.copy(python, copy)
    make_file(venv / "pyvenv.cfg", f"home = {home / '.ssh'}\n")
    assert not compute(copy, home=home).allows(home / ".ssh" / "id_rsa")
    make_file(home / ".ssh" / "python3", "interpreter bytes", executable=True)
    make_file(venv / "pyvenv.cfg", f"home = {python.parent}\n")
    policy = compute(copy, home=home)
    assert policy.allows(base / "pythons" / "3.12" / "lib") and not policy.allows(home / ".ssh" / "id_rsa")


@pytest.mark.requirement("I3")
def test_a_package_marker_deleted_in_a_shared_folder_never_moves_the_package_root_above_it(
    base: Path, home: Path
) -> None:
    monorepo = home / "src" / "monorepo"
    make_file(monorepo / "package.json", "{}")
    secret = make_file(monorepo / "packages" / "billing" / ".env", "KEY=secret")
    server = monorepo / "packages" / "server"
    script = make_file(server / "dist" / "index.js")
    make_file(server / "package.json", "{}").unlink()  # the server deleted its own marker
    for folders in ({"shared_folders": [server]}, {"workspace_folders": [monorepo, server]}):
        policy = compute("/usr/bin/node", str(script), home=home, **folders)
        assert not policy.allows(secret), folders
        assert policy.allows(script)


@pytest.mark.requirement("I3")
def test_a_later_start_gets_no_runtime_path_its_first_start_did_not_have(base: Path, home: Path) -> None:
    node = make_file(base / "runtimes" / "node" / "bin" / "node", executable=True)
    other = make_file(home / "other-project" / "bin" / "node", executable=True)
    shared = base / "work" / "webapp"
    script = make_file(shared / "bin" / "server", f"#!{node}\n", executable=True)
    first = compute(script, home=home, shared_folders=[shared])
    assert first.allows(node) and first.runtime_paths()
    script.write_text(f"#!{other}\n")  # the server rewrote its own launcher, then crashed
    unlimited = compute(script, home=home, shared_folders=[shared])
    assert unlimited.allows(home / "other-project"), "what the file alone would grant"
    later = compute(script, home=home, shared_folders=[shared], runtime_limit=first.runtime_paths())
    assert not later.allows(home / "other-project")
    assert [g.path for g in later.withheld] == [str(home / "other-project")]
    assert any("first start did not need" in warning for warning in later.warnings)


def test_a_container_client_is_said_to_confine_the_client_only(base: Path, home: Path) -> None:
    docker = make_file(base / "usr" / "bin" / "docker", executable=True)
    policy = compute(docker, "run", "-i", "--rm", "mcp/filesystem", home=home)
    assert any("not the container" in warning for warning in policy.warnings)
