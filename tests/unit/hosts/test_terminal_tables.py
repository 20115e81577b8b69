"""The one table formatter of the command line: whole cells when piped, fit to a terminal's width otherwise."""

from __future__ import annotations

from host_bridge.hosts.cli import build_parser
from host_bridge.hosts.tables import format_table
from host_bridge.workspace.models import DetectionLimits

HEADER = ("NAME", "KINDS", "PATH")
ROWS = [
    ("a-service-with-a-long-name", "git,project", "/home/me/src/a-rather-long-folder/with-a-project/service"),
    ("web", "project", "/home/me/src/web"),
]


def test_without_a_width_every_cell_is_whole_and_columns_are_two_spaces_apart() -> None:
    table = format_table(HEADER, ROWS).splitlines()

    assert table[1] == "a-service-with-a-long-name  git,project  " + ROWS[0][2]
    assert table[2].rstrip() == table[2]
    assert table[0].index("KINDS") == table[2].index("project")


def test_with_a_width_every_line_fits_and_cut_cells_end_with_an_ellipsis() -> None:
    table = format_table(HEADER, ROWS, width=60, keep_end=(2,)).splitlines()

    assert max(len(line) for line in table) <= 60
    path = table[1].split("  ")[-1]
    assert path.startswith("…") and ROWS[0][2].endswith(path[1:])
    assert table[2].split()[-1] == "/home/me/src/web"


def test_the_widest_column_shrinks_first_and_narrow_ones_keep_their_cells() -> None:
    table = format_table(HEADER, ROWS, width=70, keep_end=(2,)).splitlines()

    assert "git,project" in table[1]
    assert "a-service-with-a-long-name" in table[1]
    assert table[1].split("  ")[-1].startswith("…")


def test_a_width_too_small_for_every_column_keeps_each_at_its_header_or_eight_characters() -> None:
    table = format_table(HEADER, ROWS, width=10).splitlines()

    assert [len(cell) for cell in table[1].split("  ")] == [8, 8, 8]


def test_the_roots_options_accept_exactly_what_detection_accepts() -> None:
    parser = build_parser()
    limits = DetectionLimits.model_json_schema()["properties"]

    def accepts(option: str, value: str) -> bool:
        try:
            parser.parse_args(["roots", option, value])
        except SystemExit:
            return False
        return True

    assert accepts("--max-depth", str(limits["maxDepth"]["maximum"]))
    assert not accepts("--max-depth", str(limits["maxDepth"]["maximum"] + 1))
    assert accepts("--max-depth", str(limits["maxDepth"]["minimum"]))
    assert not accepts("--max-depth", str(limits["maxDepth"]["minimum"] - 1))
    assert accepts("--max-candidates", str(limits["maxCandidates"]["maximum"]))
    assert not accepts("--max-candidates", str(limits["maxCandidates"]["minimum"] - 1))
    assert accepts("--git-timeout", str(limits["gitTimeout"]["maximum"]))
    assert not accepts("--git-timeout", str(limits["gitTimeout"]["maximum"] + 1))
    assert accepts("--deadline", str(limits["deadline"]["maximum"]))
    assert not accepts("--deadline", "0")
