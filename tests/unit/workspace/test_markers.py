"""Project markers: names from each ecosystem's metadata and monorepo member patterns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wcmatch import glob

from host_bridge.jsonc import strip_jsonc
from host_bridge.safe_read import RepoFileError
from host_bridge.workspace import markers
from host_bridge.workspace.markers import MemberPatterns

NAMED_MANIFESTS = [
    ("pyproject.toml", '[project]\nname = "acme-api"\nversion = "1"\n', "acme-api"),
    ("pyproject.toml", '[tool.poetry]\nname = "poetic"\n', "poetic"),
    ("setup.cfg", "[metadata]\nname = cfg-name\nversion = 1\n", "cfg-name"),
    ("setup.py", 'from setuptools import setup\nsetup(\n    name="legacy-pkg",\n)\n', "legacy-pkg"),
    ("package.json", '{"name": "@acme/web", "private": true}', "@acme/web"),
    ("deno.json", '{"name": "@acme/deno-lib", "exports": "./mod.ts"}', "@acme/deno-lib"),
    ("deno.jsonc", '{\n  // the package\n  "name": "@acme/jsonc", /* c */\n  "v": "1",\n}\n', "@acme/jsonc"),
    ("Cargo.toml", '[package]\nname = "crab"\nversion = "0.1.0"\n', "crab"),
    ("go.mod", "// comment\nmodule github.com/acme/tool\n\ngo 1.22\n", "github.com/acme/tool"),
    (
        "pom.xml",
        "<?xml version='1.0'?>\n<project xmlns='http://maven.apache.org/POM/4.0.0'>\n"
        "  <!-- <artifactId>commented</artifactId> -->\n"
        "  <parent><groupId>g</groupId><artifactId>the-parent</artifactId></parent>\n"
        "  <artifactId>own-artifact</artifactId>\n"
        "  <dependencies><dependency><artifactId>dep</artifactId></dependency></dependencies>\n"
        "</project>\n",
        "own-artifact",
    ),
    ("settings.gradle", "rootProject.name = 'gradle-groovy'\ninclude 'app'\n", "gradle-groovy"),
    ("settings.gradle.kts", 'rootProject.name = "gradle-kts"\n', "gradle-kts"),
    ("Widget.csproj", "<Project Sdk='Microsoft.NET.Sdk'></Project>", "Widget"),
    ("Funky.fsproj", "", "Funky"),
    ("Old.vbproj", "", "Old"),
    ("Solution.sln", "Microsoft Visual Studio Solution File", "Solution"),
    ("gem.gemspec", 'Gem::Specification.new do |spec|\n  spec.name = "shiny"\nend\n', "shiny"),
    ("composer.json", '{"name": "acme/php-lib"}', "acme/php-lib"),
    ("mix.exs", "defmodule X.MixProject do\n  def project do\n    [app: :elixir_app]\n", "elixir_app"),
    ("pubspec.yaml", "name: dart_pkg\ndescription: x\n", "dart_pkg"),
    ("Package.swift", 'let package = Package(\n    name: "SwiftPkg",\n    targets: []\n)\n', "SwiftPkg"),
    (
        "build.sbt",
        'ThisBuild / scalaVersion := "3.3.1"\nlazy val root = (project in file(".")).settings(\n'
        '  name := "scala-proj"\n)\n',
        "scala-proj",
    ),
    ("hs.cabal", "cabal-version: 2.4\nName: haskell-pkg\nversion: 0.1\n", "haskell-pkg"),
    ("package.yaml", "name: hpack-pkg\nversion: 0.1\n", "hpack-pkg"),
    ("build.zig.zon", '.{\n    .name = "zig-old",\n    .version = "0.0.1",\n}\n', "zig-old"),
    ("build.zig.zon", '.{\n    .name = .zig_new,\n    .version = "0.0.1",\n}\n', "zig_new"),
    ("CMakeLists.txt", "cmake_minimum_required(VERSION 3.20)\n# project(no)\nproject(cm C)\n", "cm"),
]


@pytest.mark.parametrize(("file_name", "text", "expected"), NAMED_MANIFESTS)
def test_each_ecosystem_s_manifest_yields_its_declared_name(file_name: str, text: str, expected: str) -> None:
    assert markers.is_marker(file_name)
    assert markers.name_from_manifest(file_name, text) == expected


@pytest.mark.parametrize(
    "file_name",
    ["Gemfile", "go.work", "build.gradle", "build.gradle.kts", "stack.yaml", "build.zig", "pnpm-workspace.yaml"],
)
def test_markers_without_metadata_mark_a_project_but_give_no_name(file_name: str) -> None:
    assert markers.is_marker(file_name)
    assert markers.name_from_manifest(file_name, "anything at all") is None


@pytest.mark.parametrize(
    ("file_name", "text"),
    [
        ("package.json", '{"name": "x",'),
        ("package.json", "[1, 2]"),
        ("package.json", '{"name": 42}'),
        ("package.json", "[" * 100_000),
        ("pyproject.toml", "[project\nname = 'x'"),
        ("pyproject.toml", "[project]\nname = ['x']\n"),
        ("Cargo.toml", "[workspace]\nmembers = []\n"),
        ("setup.cfg", "no section header\nname = x\n"),
        ("deno.jsonc", "{ /* unterminated"),
        ("pom.xml", "<project><parent><artifactId>p</artifactId></parent></project>"),
        ("pom.xml", "<project><artifactId>${project.name}</artifactId></project>"),
        ("go.mod", "go 1.22\n"),
        ("CMakeLists.txt", "project(${NAME})\n"),
        ("package.json", '{"name": "bad\\u0000name"}'),
    ],
)
@pytest.mark.requirement("F1")
def test_an_invalid_or_unnamed_manifest_yields_no_name_and_never_raises(file_name: str, text: str) -> None:
    assert markers.name_from_manifest(file_name, text) is None


def test_a_gemspec_without_a_name_falls_back_to_its_file_stem() -> None:
    assert markers.name_from_manifest("fallback.gemspec", "Gem::Specification.new do |s| end") == "fallback"


@pytest.mark.parametrize("file_name", ["README.md", "package.json.bak", ".csproj", "Cargo.lock", "src"])
def test_other_file_names_are_not_markers(file_name: str) -> None:
    assert not markers.is_marker(file_name)
    assert markers.ecosystem_of(file_name) is None


def test_at_least_fifteen_ecosystems_are_known() -> None:
    ecosystems = {*markers.MARKER_FILES.values(), *markers.MARKER_SUFFIXES.values()}
    assert len(ecosystems) >= 15


def test_the_most_specific_manifest_names_a_folder_with_several(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "py-name"\n')
    (tmp_path / "package.json").write_text('{"name": "js-name"}')
    (tmp_path / "CMakeLists.txt").write_text("project(c_name)\n")
    found = ["CMakeLists.txt", "package.json", "pyproject.toml"]
    assert markers.project_name(str(tmp_path), found) == "py-name"


def test_a_broken_manifest_gives_way_to_the_next_one(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project\n")
    (tmp_path / "package.json").write_text('{"name": "js-name"}')
    assert markers.project_name(str(tmp_path), ["pyproject.toml", "package.json"]) == "js-name"


@pytest.mark.requirement("F1")
def test_reading_stops_at_the_cap(tmp_path: Path) -> None:
    big = tmp_path / "package.json"
    big.write_bytes(b"x" * (markers.MAX_READ + 10))
    assert len(markers.read_text(str(big)) or "") == markers.MAX_READ


@pytest.mark.requirement("F1")
def test_a_symlinked_manifest_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text('{"name": "outside"}')
    (tmp_path / "package.json").symlink_to(tmp_path / "real.json")
    assert markers.read_text(str(tmp_path / "package.json")) is None


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")
@pytest.mark.requirement("F1")
def test_a_fifo_named_like_a_manifest_does_not_block(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "package.json")
    assert markers.read_text(str(tmp_path / "package.json")) is None


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("packages/*", "packages/a", True),
        ("packages/*", "packages/a/b", False),
        ("packages/**", "packages/a/b", True),
        ("**/tests", "x/y/tests", True),
        ("**/tests", "tests", True),
        ("crates/[ab]*", "crates/alpha", True),
        ("crates/[!ab]*", "crates/alpha", False),
        ("apps/web?", "apps/web1", True),
        ("a.b", "axb", False),
    ],
)
def test_member_globs_match_whole_path_components(pattern: str, path: str, expected: bool) -> None:
    assert MemberPatterns.of([pattern]).matches(path) is expected


def test_member_patterns_drop_dot_slash_and_trailing_slash_and_treat_bang_as_exclude() -> None:
    patterns = MemberPatterns.of(["./packages/*/", "!packages/skip", "../outside", "."])
    assert patterns == MemberPatterns(("packages/*",), ("packages/skip",))
    assert patterns.matches("packages/keep")
    assert not patterns.matches("packages/skip")


@pytest.mark.parametrize(
    "text",
    ['{"workspaces": ["packages/*", "apps/web"]}', '{"workspaces": {"packages": ["packages/*", "apps/web"]}}'],
)
def test_npm_and_yarn_workspaces_are_read_as_list_or_object(text: str) -> None:
    assert markers.npm_members(text) == MemberPatterns(("packages/*", "apps/web"))


def test_a_package_json_without_workspaces_declares_no_members() -> None:
    assert markers.npm_members('{"name": "x"}') is None
    assert markers.npm_members("not json") is None


def test_the_pnpm_packages_list_is_read_by_hand() -> None:
    text = (
        "# pnpm\npackages:\n  - 'packages/*'\n  - \"apps/**\"   # all apps\n\n  - '!**/test/**'\n"
        "catalog:\n  react: ^18\n"
    )
    assert markers.pnpm_members(text) == MemberPatterns(("packages/*", "apps/**"), ("**/test/**",))


def test_a_pnpm_flow_list_is_read_too() -> None:
    assert markers.pnpm_members("packages: ['a/*', b]\n") == MemberPatterns(("a/*", "b"))


def test_cargo_workspace_members_and_excludes_are_read() -> None:
    text = '[workspace]\nmembers = ["crates/*", "tools/cli"]\nexclude = ["crates/legacy"]\n'
    assert markers.cargo_members(text) == MemberPatterns(("crates/*", "tools/cli"), ("crates/legacy",))


def test_uv_workspace_members_and_excludes_are_read() -> None:
    text = '[project]\nname = "root"\n[tool.uv.workspace]\nmembers = ["libs/*"]\nexclude = ["libs/old"]\n'
    assert markers.uv_members(text) == MemberPatterns(("libs/*",), ("libs/old",))


def test_go_work_use_directives_are_read_in_both_forms() -> None:
    text = 'go 1.22\n\nuse ./cmd/tool // the cli\nuse (\n\t./lib\n\t"./quoted"\n\t.\n)\nuse (./one ./two)\n'
    assert markers.go_work_members(text) == MemberPatterns(("cmd/tool", "lib", "quoted", "one", "two"))


def test_go_work_paths_are_literal_not_globs() -> None:
    patterns = markers.go_work_members("use ./odd[1]\n")
    assert patterns is not None
    assert patterns.matches("odd[1]")
    assert not patterns.matches("odd1")


def test_member_patterns_of_all_manifests_in_a_folder_are_combined(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"workspaces": ["web/*"]}')
    (tmp_path / "go.work").write_text("use ./svc\n")
    found = markers.workspace_members(str(tmp_path), ["package.json", "go.work", "README.md"])
    assert found is not None
    assert found.matches("web/app")
    assert found.matches("svc")
    assert not found.matches("other")


def test_json_comments_are_stripped_without_touching_strings() -> None:
    text = '{"url": "http://x//y", /* a */ "list": [1, 2,], // end\n}'
    assert strip_jsonc(text).replace(" ", "") == '{"url":"http://x//y","list":[1,2]\n}'


def finishes_in_a_child(code: str, ceiling: float = 10) -> str:
    """Run ``code`` in a fresh interpreter; its stdout if it ends within ``ceiling`` seconds, else fail.

    A child, not a thread: a regular expression that backtracks holds the GIL, so no thread could time it out.
    """
    try:
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=ceiling, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {ceiling} s")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def name_in_a_child(file_name: str, text_expression: str) -> str:
    """The name :func:`markers.name_from_manifest` gives, computed in a child bounded in time (text built there)."""
    call = f"markers.name_from_manifest({file_name!r}, {text_expression})"
    code = f"from host_bridge.workspace import markers\nprint({call})"
    return finishes_in_a_child(code)


@pytest.mark.parametrize(
    "pom",
    ["'<!--' * 30_000", "'<project><a' + 'b' * 120_000", "'<project>' + '<a x=\"1\">' * 13_000"],
    ids=["unclosed-comments", "endless-tag-name", "nested-unclosed-tags"],
)
@pytest.mark.requirement("F2")
def test_a_crafted_120_kb_pom_is_parsed_in_linear_time(pom: str) -> None:
    assert name_in_a_child("pom.xml", pom) == "None"


@pytest.mark.requirement("F2")
def test_a_pom_with_entities_or_a_dtd_gives_no_name() -> None:
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE p [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        "<project><artifactId>&b;</artifactId></project>"
    )
    assert markers.name_from_manifest("pom.xml", bomb) is None


def test_a_pom_artifact_id_with_escaped_characters_is_decoded() -> None:
    pom = "<project><artifactId>a&amp;b</artifactId></project>"
    assert markers.name_from_manifest("pom.xml", pom) == "a&b"


@pytest.mark.parametrize(
    ("file_name", "text"),
    [
        ("package.json", "'[' * 100_000 + ']' * 100_000"),
        ("deno.jsonc", "'{\"name\": \"x\", \"a\": ' + '[' * 100_000 + ']' * 100_000 + '}'"),
        ("Cargo.toml", "'[package]\\nname = \"x\"\\nv = ' + '[' * 100_000 + ']' * 100_000"),
        ("pom.xml", "'<project>' + '<a>' * 100_000 + '</a>' * 100_000 + '<artifactId>x</artifactId></project>'"),
    ],
    ids=["json", "jsonc", "toml", "xml"],
)
@pytest.mark.requirement("F1", "F2")
def test_manifests_nested_100_000_deep_give_no_name_quickly_and_never_raise(file_name: str, text: str) -> None:
    assert name_in_a_child(file_name, text) == "None"


def test_brackets_inside_json_strings_do_not_count_as_nesting() -> None:
    assert markers.name_from_manifest("package.json", '{"name": "x", "d": "' + "[" * 500 + '"}') == "x"


@pytest.mark.requirement("F2")
def test_a_go_mod_of_blank_lines_is_read_in_linear_time() -> None:
    assert name_in_a_child("go.mod", "' \\n' * 120_000") == "None"


@pytest.mark.requirement("F2")
def test_an_invalid_member_glob_is_set_aside_and_the_other_patterns_still_match() -> None:
    patterns = MemberPatterns.of(["[z-a]", "packages/*"])
    assert patterns.matches("packages/web")
    assert not patterns.matches("z")
    assert not patterns.matches("other")


@pytest.mark.requirement("F2")
def test_member_globs_built_to_backtrack_are_matched_in_linear_time() -> None:
    code = (
        "from host_bridge.workspace.markers import MemberPatterns\n"
        "p = MemberPatterns.of(['**/' * 12 + 'b', '*a' * 12 + 'b', '*/' * 40 + 'b'])\n"
        "print(p.matches('a/' * 50 + 'c'), p.matches('a' * 100), p.matches('a/' * 40 + 'b'))"
    )
    assert finishes_in_a_child(code) == "False False True"


@pytest.mark.requirement("F2")
def test_member_patterns_beyond_the_cap_are_reported_as_rejected() -> None:
    patterns = MemberPatterns.of([f"p{i}" for i in range(markers.MAX_PATTERNS + 2)])
    assert patterns.rejected == (f"p{markers.MAX_PATTERNS}", f"p{markers.MAX_PATTERNS + 1}")
    assert patterns.matches("p0")


_SEGMENTS = st.sampled_from(["a", "b", "ab", ".a", ".", "..", "", "*", "**", "?", "[ab]", "[!a]", "a\\*", "\\a", "\\"])


@settings(max_examples=400, deadline=None)
@given(
    include=st.lists(st.lists(_SEGMENTS, min_size=1, max_size=3).map("/".join), max_size=3),
    exclude=st.lists(st.lists(_SEGMENTS, min_size=1, max_size=3).map("/".join), max_size=2),
    path=st.lists(st.sampled_from(["a", "b", "ab", ".a", "*", "?", "[ab]", "\\", "\\a"]), min_size=1, max_size=3).map(
        "/".join
    ),
)
def test_literal_member_patterns_compared_as_strings_match_what_wcmatch_matches(
    include: list[str], exclude: list[str], path: str
) -> None:
    flags = glob.GLOBSTAR | glob.DOTGLOB | glob.FORCEUNIX
    usable = [p for p in include if _compiles(p, flags)]
    expected = bool(usable) and glob.compile(
        usable, flags=flags, exclude=[p for p in exclude if _compiles(p, flags)] or None
    ).match(path)

    assert MemberPatterns(tuple(include), tuple(exclude)).matches(path) is expected


def _compiles(pattern: str, flags: int) -> bool:
    try:
        glob.compile(pattern, flags=flags)
    except Exception:
        return False
    return True


def test_literal_member_patterns_need_no_glob_matcher() -> None:
    code = (
        "import sys\n"
        "from host_bridge.workspace.markers import MemberPatterns\n"
        "p = MemberPatterns.of(['./svc/a', 'svc/b/', '!svc/c'])\n"
        "print(p.matches('svc/a'), p.matches('svc/b'), p.matches('svc/c'), p.rejected, 'wcmatch' in sys.modules)"
    )
    assert finishes_in_a_child(code) == "True True False () False"


@pytest.mark.requirement("F1")
def test_a_manifest_that_is_not_utf8_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_bytes(b'{"name": "caf\xe9"}')
    with pytest.raises(RepoFileError, match=r"package\.json.*not valid UTF-8"):
        markers.read_manifest(str(tmp_path / "package.json"))
    assert markers.project_name(str(tmp_path), ["package.json"]) is None
