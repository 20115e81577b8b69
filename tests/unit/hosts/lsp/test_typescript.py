"""The TypeScript mirror of the protocol models (vscode-extension/src/protocol.ts) is generated, not written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

from host_bridge.hosts.lsp import messages
from host_bridge.hosts.lsp.typescript import generate, main

MIRROR = REPO / "vscode-extension" / "src" / "protocol.ts"


def test_the_committed_typescript_mirror_is_what_the_models_generate() -> None:
    assert MIRROR.read_text(encoding="utf-8") == generate()


def test_every_host_bridge_method_has_a_typed_message_in_the_mirror() -> None:
    text = generate()
    names = [message.method for message in messages.MESSAGES]
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


def test_docs_protocol_md_lists_exactly_the_message_table_and_carries_its_hash() -> None:
    assert messages.check_protocol_doc((REPO / "docs" / "protocol.md").read_text(encoding="utf-8")) == []


def test_the_docs_check_names_a_missing_a_stale_and_a_misplaced_method_and_a_stale_hash() -> None:
    text = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    broken = (
        text.replace("| `hostBridge/restartServer` |", "| `hostBridge/restartEverything` |")
        .replace("| `hostBridge/resourceUpdated` | notification |", "| `hostBridge/resourceUpdated` | request |")
        .replace(messages.table_hash(), "0" * 16)
    )
    problems = "\n".join(messages.check_protocol_doc(broken))
    assert "hostBridge/restartEverything, which is not in the message table" in problems
    assert "does not list hostBridge/restartServer in its editor → sidecar table" in problems
    assert "lists hostBridge/resourceUpdated as a request; it is a notification" in problems
    assert f"message table hash: {messages.table_hash()}" in problems


def test_making_the_sidecar_imports_neither_pydantic_nor_the_models_nor_the_core() -> None:
    """``initialize`` is answered by what create_server loads; the message table names its models lazily."""
    probe = (
        "import sys\n"
        "from host_bridge.hosts.lsp.main import create_server\n"
        "create_server()\n"
        "heavy = ('pydantic', 'mcp', 'host_bridge.core', 'host_bridge.hosts.lsp.protocol', 'host_bridge.hub.models')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
