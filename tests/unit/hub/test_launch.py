"""``${hostBridge:sharedFolders}`` in a stdio server's launch, and the config rules around it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from host_bridge.hub.config import load_servers
from host_bridge.hub.launch import depends_on_folders, expand_shared_folders, plan_launch, planned_sandbox

VARIABLE = "${hostBridge:sharedFolders}"
FOLDERS = ["/work/alpha", "/work/beta"]


def test_an_argument_that_is_exactly_the_variable_becomes_one_argument_per_folder() -> None:
    args, _, _ = expand_shared_folders(["serve", VARIABLE, "--flag"], {}, None, FOLDERS)
    assert args == ["serve", "/work/alpha", "/work/beta", "--flag"]


def test_the_variable_inside_a_longer_string_becomes_the_folders_joined_with_the_path_separator() -> None:
    args, env, cwd = expand_shared_folders([f"--roots={VARIABLE}"], {"ROOTS": VARIABLE, "OTHER": "x"}, None, FOLDERS)
    assert args == [f"--roots=/work/alpha{os.pathsep}/work/beta"]
    assert env == {"ROOTS": f"/work/alpha{os.pathsep}/work/beta", "OTHER": "x"}
    assert cwd is None


def test_with_nothing_shared_an_exact_argument_disappears_and_cwd_falls_back_to_the_usual_one() -> None:
    args, env, cwd = expand_shared_folders(["serve", VARIABLE], {"ROOTS": VARIABLE}, VARIABLE, [])
    assert args == ["serve"]
    assert env == {"ROOTS": ""}
    assert cwd is None


def test_as_the_working_directory_it_is_the_first_folder() -> None:
    assert expand_shared_folders([], {}, VARIABLE, FOLDERS)[2] == "/work/alpha"


def entry(**fields: Any) -> dict[str, Any]:
    return {"type": "stdio", "command": "python3", "args": ["server.py", VARIABLE], **fields}


def test_the_fingerprint_is_taken_over_the_unexpanded_config_and_changes_with_the_sandbox_setting() -> None:
    plain = load_servers({"s": entry()}, []).servers[0]
    again = load_servers({"s": entry()}, []).servers[0]
    off = load_servers({"s": entry(sandbox="off")}, []).servers[0]
    assert plain.args == ("server.py", VARIABLE), "kept unexpanded until each start"
    assert plain.fingerprint == again.fingerprint
    assert off.fingerprint != plain.fingerprint, "turning the sandbox off is a new identity, asked again"
    assert plain.uses_shared_folders and plain.ref().passes_shared_folders


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"command": VARIABLE}, "sharedFolders"),
        ({"sandbox": "loose"}, "sandbox"),
    ],
)
def test_the_variable_outside_args_env_and_cwd_or_a_bad_sandbox_value_is_a_config_problem(
    fields: dict[str, Any], problem: str
) -> None:
    result = load_servers({"s": entry(**fields)}, [])
    assert not result.servers
    assert problem in result.problems[0].message


def test_each_start_gets_the_folders_shared_now_in_a_stable_order_and_depends_on_them(tmp_path: Path) -> None:
    config = load_servers({"s": entry(sandbox="off")}, []).servers[0]
    launch = plan_launch(config, ["/work/beta", "/work/alpha"], sandbox_default="enforce", home=str(tmp_path))
    assert launch.args[-2:] == ["/work/alpha", "/work/beta"]
    assert launch.folders == ("/work/alpha", "/work/beta")
    assert launch.policy is not None and not launch.policy.enforced
    assert depends_on_folders(config, launch)


def test_a_runtime_inside_a_workspace_folder_that_is_not_shared_is_named_in_a_warning(tmp_path: Path) -> None:
    project = tmp_path / "billing"
    (project / "tools").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "billing"\n')
    script = project / "tools" / "server.py"
    script.write_text("")
    config = load_servers({"s": {"type": "stdio", "command": "python3", "args": [str(script)]}}, []).servers[0]
    launch = plan_launch(
        config, [], sandbox_default="enforce", home=str(tmp_path / "home"), workspace_folders=[str(project)]
    )
    launch.clean_up()
    assert launch.policy is not None
    assert any(str(project) in warning and "not shared" in warning for warning in launch.policy.warnings)


def test_a_server_not_started_yet_is_told_what_its_sandbox_will_be_on_this_machine() -> None:
    from host_bridge.sandbox.support import mechanism_for, supported

    planned = planned_sandbox("enforce")
    enforceable, sentence = supported()
    assert planned.planned and planned.setting == "enforce"
    assert planned.enforced is enforceable and planned.summary == sentence
    assert planned.mechanism == (mechanism_for() if enforceable else "none")


def test_a_server_whose_sandbox_is_off_is_told_before_it_starts_that_nothing_will_confine_it() -> None:
    planned = planned_sandbox("off")
    assert planned.planned and not planned.enforced and planned.mechanism == "none"
    assert "every file your account can" in planned.summary


@pytest.mark.requirement("I10")
@pytest.mark.skipif(os.pathsep != ":", reason="the POSIX path separator")
def test_a_folder_whose_name_holds_the_path_separator_is_refused_for_the_joined_form_with_a_sentence(
    tmp_path: Path,
) -> None:
    evil = "/work/evil:/etc"
    args, env, _ = expand_shared_folders(["--roots=" + VARIABLE, VARIABLE], {"ROOTS": VARIABLE}, None, [evil, "/w/a"])
    assert args == ["--roots=/w/a", evil, "/w/a"], "left out of the joined form, passed whole as its own argument"
    assert env["ROOTS"] == "/w/a" and "/etc" not in env["ROOTS"].split(os.pathsep)
    config = load_servers({"s": entry(args=["server.py", f"--roots={VARIABLE}"], sandbox="off")}, []).servers[0]
    launch = plan_launch(config, [evil, "/w/a"], sandbox_default="enforce", home=str(tmp_path))
    assert launch.args == ["server.py", "--roots=/w/a"]
    assert launch.policy is not None
    assert any("'/work/evil:/etc' is left out" in w and "two folders" in w for w in launch.policy.warnings)
    per_argument = load_servers({"s": entry(sandbox="off")}, []).servers[0]
    launch = plan_launch(per_argument, [evil], sandbox_default="enforce", home=str(tmp_path))
    assert launch.args == ["server.py", evil]
    assert launch.policy is not None and not any("left out" in w for w in launch.policy.warnings)
