"""Run host_bridge's command line from the libraries a platform .vsix carries, laid out ready to import.

The extension runs ``python -I -S <extension>/python/run_sidecar.py serve`` (and VS Code's MCP support ``… attach
<id> …``). ``-I`` ignores ``PYTHON*`` variables (``PYTHONPATH``, ``PYTHONHOME``…) and the user's site-packages,
``-S`` the interpreter's own site-packages and their ``.pth`` files: only the standard library and the folders
added here are importable, so nothing installed on the machine can stand in for a library of the package. Next to
this file, ``lib/common`` holds what every CPython the package supports imports alike (pure Python, ``abi3``
extensions) and ``lib/cp3XY`` what only CPython 3.XY imports (its compiled extensions); bundle_python.py writes
both, and ``bundle.json`` lists the Python versions they are complete for. Python writes its ``__pycache__`` next
to them, so only the first start compiles.

Standard library only; nothing but ``json``, ``os`` and ``sys`` is imported before the interpreter is checked.
"""

import json
import os
import sys

UNSUPPORTED = 3
"""Exit status when this interpreter cannot run the package's libraries (the extension names the fix)."""


def library_folders(here: str, carried: list[str], implementation: str, version: tuple[int, int]) -> list[str] | None:
    """The folders to import from, first first; None when the package has no libraries for this interpreter
    (``carried``: the Python versions ``bundle.json`` lists, the ones ``lib/`` is complete for)."""
    if implementation != "cpython" or f"{version[0]}.{version[1]}" not in carried:
        return None
    lib = os.path.join(here, "lib")
    specific = os.path.join(lib, f"cp{version[0]}{version[1]}")
    # A Python whose every library is shared has no folder of its own.
    return [os.path.join(lib, "common"), *([specific] if os.path.isdir(specific) else [])]


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "bundle.json"), encoding="utf-8") as file:
        carried: list[str] = json.load(file)["pythons"]
    major, minor = sys.version_info[:2]
    folders = library_folders(here, carried, sys.implementation.name, (major, minor))
    if folders is None:
        print(
            f"host_bridge: this extension package carries the sidecar for CPython {', '.join(carried)}, "
            f"not for {sys.implementation.name} {major}.{minor} ({sys.executable})",
            file=sys.stderr,
        )
        return UNSUPPORTED
    # What PYTHONIOENCODING=utf-8 did for `python -m host_bridge serve`, which -I ignores: the editor reads UTF-8.
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        if stream is not None:
            stream.reconfigure(encoding="utf-8")
    # As site-packages would be: after the standard library, each with its .pth files (pywin32's on Windows puts its
    # own folders on the path); no other site-packages and no other .pth file is read (-S).
    import site

    for folder in folders:
        site.addsitedir(folder)
    import runpy

    # As `python -m host_bridge …` runs from site-packages: sys.argv[1:] are its arguments.
    runpy.run_module("host_bridge", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
