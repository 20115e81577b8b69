"""Check a built ``host-bridge-*.vsix``: it holds the bundle and the sidecar, and nothing it should not.

Usage: ``python check_vsix.py FILE.vsix``. Exits 1 with one line per problem.
"""

from __future__ import annotations

import io
import json
import sys
import zipfile

REQUIRED = (
    "extension/package.json",
    "extension/readme.md",
    "extension/dist/extension.js",
    "extension/python/constraints.txt",
)
FORBIDDEN = ("extension/node_modules/", "extension/src/", "extension/test/", "extension/dist/extension.js.map")
WHEEL_MODULES = (
    "host_bridge/__main__.py",
    "host_bridge/hosts/cli.py",
    "host_bridge/hosts/lsp/server.py",
    "host_bridge/hub/connection.py",
    "host_bridge/consent/store.py",
)


def problems(path: str) -> list[str]:
    """Everything wrong with the package at ``path``."""
    found: list[str] = []
    with zipfile.ZipFile(path) as vsix:
        names = vsix.namelist()
        found += [f"missing {name}" for name in REQUIRED if name not in names]
        found += [f"must not contain {name}" for prefix in FORBIDDEN for name in names if name.startswith(prefix)]
        wheels = [n for n in names if n.startswith("extension/python/host_bridge-") and n.endswith(".whl")]
        if len(wheels) != 1:
            found.append(f"expected one host_bridge wheel under extension/python/, found {len(wheels)}")
        else:
            with zipfile.ZipFile(io.BytesIO(vsix.read(wheels[0]))) as wheel:
                inside = set(wheel.namelist())
                found += [f"the wheel lacks {module}" for module in WHEEL_MODULES if module not in inside]
        if "extension/package.json" in names:
            manifest = json.loads(vsix.read("extension/package.json"))
            if manifest.get("main") != "./dist/extension.js":
                found.append(f"package.json main is {manifest.get('main')!r}, expected './dist/extension.js'")
        if "extension/dist/extension.js" in names:
            bundle = vsix.read("extension/dist/extension.js")
            if b"vscode-languageclient" not in bundle and b"LanguageClient" not in bundle:
                found.append("dist/extension.js does not contain the language client: was it bundled?")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: check_vsix.py FILE.vsix", file=sys.stderr)
        return 2
    found = problems(argv[0])
    for problem in found:
        print(f"{argv[0]}: {problem}", file=sys.stderr)
    if not found:
        print(f"{argv[0]}: ok")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
