"""docs/architecture.md's code map names every module and package of host_bridge/, and nothing that does not exist,
so that a newcomer can trust it."""

from __future__ import annotations

import re
from pathlib import Path

from support.paths import REPO

PACKAGE = REPO / "host_bridge"
DOC = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
ENTRY = re.compile(r"^(?P<indent> *)(?P<name>[\w.]+(?:/[\w.]+)*/?)(?:\s|$)")


def code_map_block(doc: str) -> list[str]:
    """The lines of the first fenced block under the "Code map" heading."""
    section = doc.split("\n## Code map\n", 1)[1]
    return section.split("```", 2)[1].splitlines()[1:]


def mapped_paths(lines: list[str]) -> set[str]:
    """Every entry of the map as a path from the repository's root, its folder taken from the indentation."""
    paths: set[str] = set()
    stack: list[tuple[int, str]] = []
    for line in lines:
        match = ENTRY.match(line)
        if match is None or not (match["name"].endswith("/") or match["name"].endswith(".py")):
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "".join(folder for _, folder in stack) + match["name"]
        paths.add(path.rstrip("/"))
        if match["name"].endswith("/"):
            stack.append((indent, match["name"]))
    return paths


def package_paths() -> set[str]:
    """Every module (but a package's __init__.py) and every package under host_bridge/."""
    found: set[str] = {"host_bridge"}
    for path in PACKAGE.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        relative = path.relative_to(REPO)
        if path.name != "__init__.py":
            found.add(relative.as_posix())
        found.update(parent.as_posix() for parent in relative.parents if parent != Path("."))
    return found


def test_the_map_reads_entries_from_indentation() -> None:
    lines = ["a/", "  b.py   one", "  c/       two", "    d.py   three", "  e.py", "f/", "  g.py"]

    assert mapped_paths(lines) == {"a", "a/b.py", "a/c", "a/c/d.py", "a/e.py", "f", "f/g.py"}


def test_the_code_map_names_every_module_and_package_of_host_bridge() -> None:
    mapped = {path for path in mapped_paths(code_map_block(DOC)) if path.startswith("host_bridge")}

    missing = sorted(package_paths() - mapped)
    assert not missing, f"add these to the code map of docs/architecture.md, with what each does: {missing}"


def test_the_code_map_names_nothing_that_does_not_exist() -> None:
    mapped = mapped_paths(code_map_block(DOC))

    stale = sorted(path for path in mapped if not (REPO / path).exists())
    assert not stale, f"the code map of docs/architecture.md names what is gone: {stale}"
