"""docs/security.md against the tests: the requirement IDs it defines, the tests marked
``@pytest.mark.requirement(...)``, the IDs cited in docstrings and comments under ``tests/``, and the generated
**Tests** list of each requirement.

Read statically (``ast`` and ``tokenize``), so the check needs no test collection and sees every tier. Run it as a
script to regenerate the lists: ``.venv/bin/python tests/support/requirements.py --write`` (``--check`` exits 1 when
they are out of date). Standard library only, so that it runs without ``tests`` on ``sys.path``.
"""

from __future__ import annotations

import ast
import io
import os
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
SECURITY_DOC = REPO / "docs" / "security.md"
SKIPPED_DIRS = frozenset({"node_modules", "peers", "__pycache__", ".pytest_cache"})
"""Folders under ``tests/`` that hold no test code of ours (installed packages, caches)."""
TIERS = ("unit", "integration", "e2e")
"""The order tests are listed in; anything else comes after."""

HEADING = re.compile(r"^### ([A-I][1-9]\d?) · (\S.*)$")
"""A requirement's heading: ``### C9 · A line on stdout too long to hold``."""
EXCUSES = ("- **Not testable here:**", "- **Not built yet:**")
"""Lines that excuse a requirement from having a marked test; each must give a reason."""
TESTS_BULLET = "- **Tests** (generated from the markers):"
STALE = "docs/security.md: the Tests lists are out of date"
_ID = r"([A-I])([1-9]\d?)"
_RANGE = re.compile(rf"(?<![\w%\\]){_ID}\s*[–-]\s*(?:\1)?([1-9]\d?)(?!\w)")
"""``C1–C5`` or ``C1-5``: every ID from the first to the last."""
_SINGLE = re.compile(rf"(?<![\w%\\]){_ID}(?!\w)")
"""``C9``, but not the ``C3`` of ``%C3`` or ``\\xC3``."""


@dataclass(frozen=True)
class Requirement:
    """One ``### ID · title`` section of docs/security.md."""

    id: str
    title: str
    excuses: tuple[str, ...]
    """Its **Not testable here** / **Not built yet** lines, which say why a test cannot prove it."""


@dataclass(frozen=True)
class Marker:
    """A ``requirement`` marker on a test (through a decorator, ``pytestmark`` or ``pytest.param(marks=…)``)."""

    path: str
    """The test module, relative to ``tests/``."""
    test: str
    """The test's name, with ``[param id]`` when the marker is on one parameter set."""
    ids: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class Citation:
    """An ID named in a docstring, a comment or a Markdown file under ``tests/``."""

    path: str
    line: int
    id: str


def parse_requirements(text: str) -> dict[str, Requirement]:
    """The requirements defined by docs/security.md, in order; a duplicate ID is an error."""
    found: dict[str, Requirement] = {}
    for heading, body in _blocks(text.splitlines()):
        match = HEADING.match(heading or "")
        if match is None:
            continue
        requirement_id = match[1]
        if requirement_id in found:
            raise ValueError(f"{requirement_id} is defined twice in docs/security.md")
        excuses = tuple(line for line in body if line.startswith(EXCUSES))
        found[requirement_id] = Requirement(requirement_id, match[2], excuses)
    return found


def cited_ids(text: str) -> Iterator[tuple[int, str]]:
    """Every ``(offset, ID)`` that ``text`` cites, ranges expanded."""
    for match in _RANGE.finditer(text):
        letter, first, last = match[1], int(match[2]), int(match[3])
        for number in range(first, last + 1):
            yield match.start(), f"{letter}{number}"
    rest = _RANGE.sub(lambda match: " " * len(match[0]), text)
    for match in _SINGLE.finditer(rest):
        yield match.start(), f"{match[1]}{match[2]}"


def modules_with_tests(root: Path = TESTS) -> list[Path]:
    """The test modules under ``root`` (``test_*.py``), sorted."""
    return sorted(path for path in _files(root, ".py") if path.name.startswith("test_"))


def find_markers(root: Path = TESTS) -> tuple[list[Marker], list[str]]:
    """Every ``requirement`` marker on a test under ``root``, and the problems with markers that cannot be read."""
    markers: list[Marker] = []
    problems: list[str] = []
    for path in modules_with_tests(root):
        found, trouble = markers_in(path.read_text(encoding="utf-8"), _relative(path, root))
        markers.extend(found)
        problems.extend(trouble)
    return markers, problems


def markers_in(source: str, path: str) -> tuple[list[Marker], list[str]]:
    """The ``requirement`` markers of one test module's source, and problems (a marker that is not on a test, or whose
    arguments are not string literals)."""
    tree = ast.parse(source)
    calls: dict[int, ast.Call] = {
        id(node): node for node in ast.walk(tree) if isinstance(node, ast.Call) and _is_requirement(node)
    }
    markers: list[Marker] = []
    problems: list[str] = []

    def take(call: ast.Call, test: str) -> None:
        calls.pop(id(call), None)
        ids = [arg.value for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        if not call.args or len(ids) != len(call.args) or call.keywords:
            problems.append(f"{path}:{call.lineno}: requirement(...) takes one or more IDs as string literals")
        else:
            markers.append(Marker(path, test, tuple(ids), call.lineno))

    def tests_of(body: Sequence[ast.stmt], shared: list[ast.Call]) -> None:
        shared = shared + _requirement_calls(_pytestmark(body))
        for node in body:
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                tests_of(node.body, shared + _requirement_calls(node.decorator_list))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
                for call in shared + _requirement_calls(node.decorator_list):
                    take(call, node.name)
                for param_id, call in _param_markers(node.decorator_list):
                    if param_id is None:
                        calls.pop(id(call), None)
                        problems.append(f"{path}:{call.lineno}: a pytest.param with a requirement marker needs an id")
                    else:
                        take(call, f"{node.name}[{param_id}]")

    tests_of(tree.body, [])
    problems.extend(f"{path}:{call.lineno}: requirement(...) is not on a test" for call in calls.values())
    return markers, problems


def find_citations(root: Path = TESTS) -> list[Citation]:
    """Every ID cited in docstrings and comments of the Python files, and in the Markdown files, under ``root``."""
    citations: list[Citation] = []
    for path in _files(root, ".py"):
        for line, text in _docs_and_comments(path.read_text(encoding="utf-8")):
            found = cited_ids(text)
            citations.extend(Citation(_relative(path, root), line + text.count("\n", 0, at), i) for at, i in found)
    for path in _files(root, ".md"):
        text = path.read_text(encoding="utf-8")
        citations.extend(Citation(_relative(path, root), 1 + text.count("\n", 0, at), i) for at, i in cited_ids(text))
    return citations


def render(text: str, markers: Iterable[Marker]) -> str:
    """docs/security.md with the **Tests** list of every requirement regenerated from ``markers``."""
    by_id: dict[str, list[Marker]] = {}
    for marker in sorted(markers, key=_order):
        for requirement_id in marker.ids:
            by_id.setdefault(requirement_id, []).append(marker)
    lines = text.splitlines()
    out: list[str] = []
    for heading, body in _blocks(lines):
        if heading is not None:
            out.append(heading)
        match = HEADING.match(heading or "")
        if match is None:
            out.extend(body)
            continue
        cut = next((i for i, line in enumerate(body) if line.startswith("- **Tests**")), len(body))
        kept = list(body[:cut])
        while kept and not kept[-1].strip():
            kept.pop()
        tests = by_id.get(match[1], [])
        kept.append(f"{TESTS_BULLET} none." if not tests else TESTS_BULLET)
        kept.extend(f"  - `{m.path}::{m.test}`" for m in _unique(tests))
        out.extend([*kept, ""])
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + "\n"


def main(argv: Sequence[str]) -> int:
    """``--write`` regenerates the **Tests** lists of docs/security.md; ``--check`` says whether they are current."""
    if list(argv) not in (["--write"], ["--check"]):
        print("usage: requirements.py --write | --check", file=sys.stderr)
        return 2
    text = SECURITY_DOC.read_text(encoding="utf-8")
    markers, problems = find_markers()
    for problem in problems:
        print(problem, file=sys.stderr)
    fresh = render(text, markers)
    if argv[0] == "--write":
        if fresh != text:
            SECURITY_DOC.write_text(fresh, encoding="utf-8")
        return 1 if problems else 0
    if fresh != text:
        print(f"{STALE}; run tests/support/requirements.py --write", file=sys.stderr)
        return 1
    return 1 if problems else 0


def _blocks(lines: Sequence[str]) -> Iterator[tuple[str | None, list[str]]]:
    """The lines before the first heading (with ``None``), then each Markdown heading with the lines under it."""
    heading: str | None = None
    body: list[str] = []
    for line in lines:
        if line.startswith("#"):
            yield heading, body
            heading, body = line, []
        else:
            body.append(line)
    yield heading, body


def _files(root: Path, suffix: str) -> Iterator[Path]:
    """The files under ``root`` ending in ``suffix``, sorted, never looking into :data:`SKIPPED_DIRS` or a hidden
    folder (``tests/compat/.layouts`` holds whole installed packages)."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in SKIPPED_DIRS and not name.startswith(".")]
        found.extend(Path(folder, name) for name in files if name.endswith(suffix))
    yield from sorted(found)


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _order(marker: Marker) -> tuple[int, str, int]:
    tier = marker.path.split("/", 1)[0]
    return (TIERS.index(tier) if tier in TIERS else len(TIERS), marker.path, marker.line)


def _unique(markers: Iterable[Marker]) -> Iterator[Marker]:
    seen: set[tuple[str, str]] = set()
    for marker in markers:
        if (marker.path, marker.test) not in seen:
            seen.add((marker.path, marker.test))
            yield marker


def _is_requirement(node: ast.AST) -> bool:
    """``<anything>.mark.requirement(...)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "requirement"
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "mark"
    )


def _requirement_calls(nodes: Iterable[ast.expr | None]) -> list[ast.Call]:
    """The requirement markers among decorators or ``pytestmark`` values (lists and tuples opened)."""
    found: list[ast.Call] = []
    for node in nodes:
        if isinstance(node, ast.List | ast.Tuple):
            found.extend(_requirement_calls(node.elts))
        elif node is not None and _is_requirement(node):
            assert isinstance(node, ast.Call)
            found.append(node)
    return found


def _pytestmark(body: Sequence[ast.stmt]) -> list[ast.expr | None]:
    """The values assigned to ``pytestmark`` in a module's or class's body."""
    values: list[ast.expr | None] = []
    for node in body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(target, ast.Name) and target.id == "pytestmark" for target in targets):
            assert isinstance(node, ast.Assign | ast.AnnAssign)
            values.append(node.value)
    return values


def _param_markers(decorators: Iterable[ast.expr]) -> Iterator[tuple[str | None, ast.Call]]:
    """``(id, marker)`` for every requirement marker in a ``pytest.param(..., marks=..., id=...)`` of a decorator;
    the id is ``None`` when the parameter set has no literal ``id``."""
    for decorator in decorators:
        for node in ast.walk(decorator):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "param"):
                continue
            keywords = {keyword.arg: keyword.value for keyword in node.keywords}
            param_id = keywords.get("id")
            name = param_id.value if isinstance(param_id, ast.Constant) and isinstance(param_id.value, str) else None
            for call in _requirement_calls([keywords.get("marks")]):
                yield name, call


def _docs_and_comments(source: str) -> Iterator[tuple[int, str]]:
    """``(first line, text)`` of every string that stands alone as a statement (docstrings, attribute docstrings)
    and every comment."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.lineno, node.value.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
