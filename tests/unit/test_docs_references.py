"""The docs name code that exists: every dotted ``host_bridge.…`` name in docs/ resolves to a module or attribute."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from support.paths import REPO

DOCS = sorted((REPO / "docs").glob("*.md"))
_DOTTED = re.compile(r"host_bridge(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_dotted_name_in_the_docs_resolves(doc: Path) -> None:
    names = sorted(set(_DOTTED.findall(doc.read_text(encoding="utf-8"))))
    missing = [name for name in names if not resolves(name.rstrip("."))]
    assert missing == [], f"{doc.name} names code that does not exist: {missing}"
