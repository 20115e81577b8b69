"""The TypeScript mirror of the protocol models (vscode-extension/src/protocol.ts) is generated, not written."""

from __future__ import annotations

from pathlib import Path

import pytest

from host_bridge.hosts.lsp import methods
from host_bridge.hosts.lsp.typescript import generate, main

MIRROR = Path(__file__).resolve().parents[2] / "vscode-extension" / "src" / "protocol.ts"


def test_the_committed_typescript_mirror_is_what_the_models_generate() -> None:
    assert MIRROR.read_text(encoding="utf-8") == generate()


def test_every_host_bridge_method_has_a_typed_message_in_the_mirror() -> None:
    text = generate()
    names = [value for key, value in vars(methods).items() if key.isupper()]
    for method in names:
        assert f'("{method}")' in text, method


def test_fields_the_sidecar_always_sends_are_required_and_none_defaults_optional() -> None:
    text = generate()
    assert "  variables: string[];" in text
    assert "  sharedRoots: SharedRoot[];" in text
    assert "  lastError?: string;" in text
    assert "  trust?: boolean;" in text


def test_check_mode_names_the_fix_when_the_mirror_is_out_of_date(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "protocol.ts"
    stale.write_text("export interface Old {}\n", encoding="utf-8")
    assert main(["--check", str(stale)]) == 1
    assert "run `make protocol`" in capsys.readouterr().err
    assert main(["--check", str(MIRROR)]) == 0
