"""Put the sidecar into the extension package: ``python/host_bridge-*.whl`` and ``python/constraints.txt``.

Run with the project's virtual environment (``.venv/bin/python``): the constraints pin every runtime
dependency of ``host-bridge`` to the version installed (and tested) there, so a user's private environment
gets exactly what ``make test`` ran against.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

HERE = Path(__file__).resolve().parent
EXTENSION = HERE.parent
PROJECT = EXTENSION.parent
OUT = EXTENSION / "python"


def runtime_closure(root: str) -> dict[str, str]:
    """``{name: version}`` of ``root`` and everything it needs at run time (no extras) in this environment."""
    environment = {k: str(v) for k, v in default_environment().items()}
    pending = [root]
    found: dict[str, str] = {}
    while pending:
        name = pending.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        dist = metadata.distribution(name)
        found[key] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate({**environment, "extra": ""}):
                continue
            pending.append(requirement.name)
    return found


def main() -> int:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(OUT), str(PROJECT)],
        check=True,
    )
    pins = runtime_closure("host-bridge")
    pins.pop("host-bridge")
    lines = [f"{name}=={version}" for name, version in sorted(pins.items())]
    (OUT / "constraints.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    wheels = [p.name for p in OUT.glob("host_bridge-*.whl")]
    print(f"bundled {', '.join(wheels)} with {len(lines)} pinned dependencies")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
