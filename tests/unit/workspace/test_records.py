"""Detection's plain records say on the wire exactly what its wire models say (``host-bridge roots --json``)."""

from __future__ import annotations

import dataclasses

import pytest

from host_bridge.workspace.models import Candidate, Detection, DetectionNotice, DetectionSettings, WorkspaceFolder
from host_bridge.workspace.records import DEFAULTS, Folder, Found, FoundCandidate, FoundNotice, Settings

_CANDIDATES = [
    {"uri": "file:///w", "name": "w", "kinds": ("workspaceFolder",)},
    {
        "uri": "file:///w/a",
        "name": "evil\u202egnp.exe\u200b",
        "kinds": ("git", "worktree", "project"),
        "markers": (".git", "pack\u200bage.json"),
        "parent": "file:///w",
        "declared_uri": "file:///link/a",
    },
    {"uri": "file:///w/b", "name": "b", "kinds": ("project",), "markers": ("go.mod",), "parent": "file:///w"},
]


@pytest.mark.parametrize("fields", _CANDIDATES)
def test_a_found_candidate_is_on_the_wire_what_a_candidate_is(fields: dict[str, object]) -> None:
    found = FoundCandidate(**fields)  # type: ignore[arg-type]
    model = Candidate.model_validate(fields)

    assert found.to_wire() == model.to_wire()
    assert list(found.to_wire()) == list(model.to_wire())  # the key order too


@pytest.mark.parametrize("uri", [None, "file:///w"])
def test_a_found_notice_is_on_the_wire_what_a_detection_notice_is(uri: str | None) -> None:
    fields = {"kind": "boundHit", "message": "Stopped at \u2066x\u2069\n", "uri": uri}

    assert FoundNotice(**fields).to_wire() == DetectionNotice.model_validate(fields).to_wire()  # type: ignore[arg-type]


def test_names_markers_and_messages_are_made_visible_as_the_models_make_them() -> None:
    found = FoundCandidate(uri="file:///x", name="a\u202eb", kinds=("project",), markers=("c\u200bd",))

    assert (found.name, found.markers) == ("a\\u202eb", ("c\\u200bd",))
    assert FoundNotice("unreadable", "x\x1by").message == "x\\u001by"


@pytest.mark.parametrize(
    ("record", "model"),
    [(FoundCandidate, Candidate), (FoundNotice, DetectionNotice), (Found, Detection), (Folder, WorkspaceFolder)],
)
def test_each_record_has_the_fields_of_its_model(record: type, model: type[Candidate]) -> None:
    assert [field.name for field in dataclasses.fields(record)] == list(model.model_fields)


def test_the_plain_settings_are_the_defaults_of_the_settings_model() -> None:
    assert [field.name for field in dataclasses.fields(Settings)] == list(DetectionSettings.model_fields)
    assert dataclasses.asdict(DEFAULTS) == DetectionSettings().model_dump()
