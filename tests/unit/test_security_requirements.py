"""docs/security.md and the tests keep each other honest: every requirement is proved by a marked test or says why
it cannot be, every ID a marker, docstring or comment cites exists, and the generated Tests lists are current."""

from __future__ import annotations

import re
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest
from support import requirements
from support.paths import REPO
from support.requirements import Marker, Requirement, cited_ids, markers_in, render

DOC = (REPO / "docs" / "security.md").read_text(encoding="utf-8")
REQUIREMENTS = requirements.parse_requirements(DOC)
MARKERS, MARKER_PROBLEMS = requirements.find_markers()
FIX = "run `.venv/bin/python tests/support/requirements.py --write`"


def proved() -> dict[str, list[Marker]]:
    by_id: dict[str, list[Marker]] = defaultdict(list)
    for marker in MARKERS:
        for requirement_id in marker.ids:
            by_id[requirement_id].append(marker)
    return by_id


def test_the_document_defines_every_section_from_a_to_i_without_gaps() -> None:
    numbers: dict[str, list[int]] = defaultdict(list)
    for requirement_id in REQUIREMENTS:
        numbers[requirement_id[0]].append(int(requirement_id[1:]))
    assert sorted(numbers) == list("ABCDEFGHI")
    for letter, found in numbers.items():
        assert found == list(range(1, len(found) + 1)), f"section {letter} skips or repeats an ID: {found}"


def test_every_requirement_is_proved_by_a_marked_test_or_says_why_it_cannot_be() -> None:
    marked = proved()
    unproved = [r.id for r in REQUIREMENTS.values() if not marked[r.id] and not r.excuses]
    assert not unproved, f"no test is marked with these IDs and docs/security.md does not say why: {unproved}"


def test_every_excuse_gives_a_reason() -> None:
    for requirement in REQUIREMENTS.values():
        for excuse in requirement.excuses:
            reason = excuse.split(":**", 1)[1].strip()
            assert len(reason) > 20, f"{requirement.id}: {excuse!r} needs a reason"


def test_every_marker_is_on_a_test_and_names_ids_as_literals() -> None:
    assert not MARKER_PROBLEMS


def test_every_marker_names_a_requirement_that_exists() -> None:
    unknown = [f"{m.path}::{m.test} cites {i}" for m in MARKERS for i in m.ids if i not in REQUIREMENTS]
    assert not unknown, f"not defined in docs/security.md: {unknown}"


def test_every_id_a_docstring_comment_or_readme_under_tests_cites_exists() -> None:
    citations = requirements.find_citations()
    unknown = [f"{c.path}:{c.line} cites {c.id}" for c in citations if c.id not in REQUIREMENTS]
    assert citations, "the scan found no citations at all; is it looking in the right place?"
    assert not unknown, f"not defined in docs/security.md: {unknown}"


def test_the_tests_lists_in_docs_security_md_are_generated_from_the_current_markers() -> None:
    assert render(DOC, MARKERS) == DOC, f"{requirements.STALE}; {FIX}"


def test_the_requirement_marker_is_registered_for_strict_markers() -> None:
    pytest_options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(marker.startswith("requirement(") for marker in pytest_options["markers"])
    assert "--strict-markers" in pytest_options["addopts"]


# The scanner itself.


def test_a_range_is_expanded_and_an_escape_is_not_an_id() -> None:
    text = "rows C1–C3 and F1-4, (A9), B7, but not %C3%A9, \\xC3, 0xE9, ABC1 or C9x"
    assert [i for _, i in cited_ids(text)] == ["C1", "C2", "C3", "F1", "F2", "F3", "F4", "A9", "B7"]


SOURCE = '''
"""Module docstring citing D1."""
import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.requirement("H1")]

X = 1  # a comment citing E2


@pytest.mark.requirement("A1", "A2")
def test_decorated() -> None:
    """Docstring citing G3."""


@pytest.mark.parametrize("mode", [pytest.param("a", id="first", marks=pytest.mark.requirement("C11")), "b"])
def test_parametrized(mode: str) -> None:
    assert "C99 in a string literal is not a citation"


class TestGroup:
    pytestmark = pytest.mark.requirement("B1")

    def test_in_a_class(self) -> None:
        pass


def helper() -> None:
    pass
'''


def test_markers_are_found_on_decorators_pytestmark_classes_and_parameter_sets() -> None:
    found, problems = markers_in(SOURCE, "unit/test_x.py")

    assert problems == []
    assert sorted((m.test, m.ids) for m in found) == [
        ("test_decorated", ("A1", "A2")),
        ("test_decorated", ("H1",)),
        ("test_in_a_class", ("B1",)),
        ("test_in_a_class", ("H1",)),
        ("test_parametrized", ("H1",)),
        ("test_parametrized[first]", ("C11",)),
    ]


@pytest.mark.parametrize(
    "source",
    [
        "import pytest\n\n@pytest.mark.requirement()\ndef test_x() -> None: ...\n",
        "import pytest\nIDS = ('A1',)\n\n@pytest.mark.requirement(*IDS)\ndef test_x() -> None: ...\n",
        "import pytest\n\n@pytest.mark.requirement('A1')\ndef helper() -> None: ...\n",
        "import pytest\nMARK = pytest.mark.requirement('A1')\n",
        "import pytest\n\n@pytest.mark.parametrize('v', [pytest.param(1, marks=pytest.mark.requirement('A1'))])\n"
        "def test_x(v: int) -> None: ...\n",
    ],
    ids=["no-ids", "not-literal", "not-a-test", "stray", "param-without-id"],
)
def test_a_marker_the_check_cannot_read_is_a_problem(source: str) -> None:
    found, problems = markers_in(source, "unit/test_x.py")
    assert found == [] and len(problems) == 1, problems


def test_citations_come_from_docstrings_and_comments_only(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(SOURCE)
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "test_y.py").write_text("# cites A3\n")

    cited = sorted(c.id for c in requirements.find_citations(tmp_path))

    assert cited == ["D1", "E2", "G3"]


def test_rendering_writes_each_list_under_its_requirement_and_keeps_everything_else() -> None:
    doc = "# Title\n\nIntro.\n\n## A. Section\n\n### A1 · One\n- **Fault:** x\n\n### A2 · Two\n- **Fault:** y\n"
    markers = [Marker("e2e/test_b.py", "test_late", ("A1",), 5), Marker("unit/test_a.py", "test_early", ("A1",), 9)]

    once = render(doc, markers)

    assert once == (
        "# Title\n\nIntro.\n\n## A. Section\n\n"
        "### A1 · One\n- **Fault:** x\n"
        f"{requirements.TESTS_BULLET}\n  - `unit/test_a.py::test_early`\n  - `e2e/test_b.py::test_late`\n\n"
        f"### A2 · Two\n- **Fault:** y\n{requirements.TESTS_BULLET} none.\n"
    )
    assert render(once, markers) == once
    assert render(once, markers[:1]).count("test_early") == 0


def test_parsing_reads_titles_and_excuses() -> None:
    doc = "### A12 · Windows\n- **Fault:** x\n- **Not testable here:** needs a Windows volume to resolve names\n"
    assert requirements.parse_requirements(doc) == {
        "A12": Requirement("A12", "Windows", ("- **Not testable here:** needs a Windows volume to resolve names",))
    }
    with pytest.raises(ValueError, match="A1 is defined twice"):
        requirements.parse_requirements("### A1 · x\n### A1 · y\n")


def test_the_script_form_checks_and_writes_the_same_lists(capsys: pytest.CaptureFixture[str]) -> None:
    assert requirements.main(["--check"]) == 0, capsys.readouterr().err
    assert requirements.main([]) == 2
    assert re.search(r"usage: requirements\.py", capsys.readouterr().err)
