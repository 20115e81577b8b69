"""Benchmark of candidate detection on a synthetic monorepo, relative to ``git ls-files`` on the same tree.

The tree: one git repository of about 100 000 files (a few hundred left untracked), about 40 % of them
in a .gitignore'd node_modules tree, about 300 nested projects across four ecosystems (package.json,
pyproject.toml, Cargo.toml, go.mod) with npm, Cargo, go.work and uv workspace manifests at the top, and
one nested independent repository.

Printed, each the median of 5 runs after a warm-up: in-process ``detect()`` time divided by the wall time of
``git ls-files --cached --others --exclude-standard`` (target ≤ 1.5), and the same ratio for a naive
``os.walk`` scan that opens every manifest it meets with no ignore rules.

Then the whole process (issue 17), over 11 rounds after a warm-up round: each round runs ``git ls-files`` and
``host-bridge roots TREE`` (start-up and imports included) as subprocesses, one right after the other, and its ratio
is roots over git; printed are the median of those ratios, their range, and the median seconds. The target (≤ 3) is
judged on the wall-clock ratio, what a user waits; the CPU-seconds ratio (user + system, git's children included)
is printed beside it because a busy machine disturbs it less. Last, ``host-bridge roots`` on an empty folder
(start-up alone). ``roots`` runs with its bytecode cached, as an installed host-bridge does
(``PYTHONDONTWRITEBYTECODE`` is dropped and ``PYTHONPYCACHEPREFIX`` points into a temporary folder, filled in the
warm-up round), so that an environment that forbids writing bytecode does not add compiling to every run. Times are
never asserted.

    .venv/bin/python bench/detect.py [--dir DIR] [--runs 5] [--process-runs 11]

With ``--dir`` the tree is kept and reused by later runs; otherwise it lives in a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from host_bridge.uris import path_to_uri
from host_bridge.workspace import markers
from host_bridge.workspace.detect import detect
from host_bridge.workspace.models import WorkspaceFolder

LAYOUT_VERSION = "bench-detect-layout-v2"
PROJECTS_PER_ECOSYSTEM = 75
FILES_PER_PROJECT = 200
NODE_MODULES_PACKAGES = 2000
FILES_PER_NODE_PACKAGE = 20
IDENTITY = ("user.name=bench", "user.email=bench@example.invalid", "init.defaultBranch=main")
GIT = ["git", *(arg for setting in IDENTITY for arg in ("-c", setting))]

ECOSYSTEMS: dict[str, tuple[str, Callable[[str], str], str]] = {
    "packages": ("package.json", lambda name: f'{{"name": "@bench/{name}", "version": "1.0.0"}}\n', ".ts"),
    "libs": ("pyproject.toml", lambda name: f'[project]\nname = "{name}"\nversion = "1.0"\n', ".py"),
    "crates": ("Cargo.toml", lambda name: f'[package]\nname = "{name}"\nversion = "0.1.0"\n', ".rs"),
    "services": ("go.mod", lambda name: f"module example.com/bench/{name}\n\ngo 1.22\n", ".go"),
}


def git(cwd: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def build(root: Path) -> None:
    """Create the synthetic monorepo below ``root`` (which must be empty or missing)."""
    root.mkdir(parents=True, exist_ok=True)
    uses = "".join(f"\t./services/svc{i:03}\n" for i in range(PROJECTS_PER_ECOSYSTEM))
    write(root / "package.json", '{"name": "bench-mono", "private": true, "workspaces": ["packages/*"]}\n')
    write(root / "Cargo.toml", '[workspace]\nmembers = ["crates/*"]\nexclude = ["crates/none"]\n')
    write(root / "go.work", f"go 1.22\n\nuse (\n{uses})\n")
    uv_workspace = '[tool.uv.workspace]\nmembers = ["libs/*"]\n'
    write(root / "pyproject.toml", f'[project]\nname = "bench-mono"\n{uv_workspace}')
    write(root / ".gitignore", "node_modules/\n")
    short = {"packages": "pkg", "libs": "lib", "crates": "crate", "services": "svc"}
    for group, (manifest, content, suffix) in ECOSYSTEMS.items():
        for index in range(PROJECTS_PER_ECOSYSTEM):
            name = f"{short[group]}{index:03}"
            project = root / group / name
            write(project / manifest, content(name))
            for n in range(FILES_PER_PROJECT - 1):
                write(project / "src" / f"mod{n % 10}" / f"sub{n % 3}" / f"file{n:03}{suffix}", f"// {n}\n")
    for index in range(NODE_MODULES_PACKAGES):
        package = root / "node_modules" / f"dep{index:04}"
        write(package / "package.json", f'{{"name": "dep{index:04}"}}\n')
        for n in range(FILES_PER_NODE_PACKAGE - 1):
            write(package / "lib" / f"part{n:02}.js", "module.exports = 1;\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "synthetic monorepo")
    draft = root / "packages" / "draft"
    write(draft / "package.json", '{"name": "@bench/draft"}\n')
    for n in range(300):
        write(draft / "src" / f"wip{n:03}.ts", "")
    nested = root / "third_party" / "vendored"
    write(nested / "package.json", '{"name": "vendored"}\n')
    for n in range(200):
        write(nested / "src" / f"v{n:03}.js", "")
    git(nested, "init", "-q")
    git(nested, "add", "-A")
    git(nested, "commit", "-q", "-m", "nested")
    (root / ".git" / LAYOUT_VERSION).write_text("complete\n")


def ensure_tree(root: Path) -> None:
    """Build the tree unless a complete one of this layout is already there."""
    if (root / ".git" / LAYOUT_VERSION).exists():
        return
    if root.exists() and any(root.iterdir()):
        sys.exit(f"{root} exists but does not hold a complete benchmark tree; give an empty or new --dir")
    started = time.perf_counter()
    print(f"building the synthetic monorepo in {root} …", file=sys.stderr, flush=True)
    build(root)
    print(f"built in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)


def time_git(root: Path) -> None:
    subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def time_detect(root: Path) -> None:
    detect([WorkspaceFolder(uri=path_to_uri(str(root)))])


def time_naive(root: Path) -> None:
    names: list[str] = []
    for directory, _, files in os.walk(root):
        for name in files:
            if markers.is_marker(name):
                with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as handle:
                    names.append(handle.read())


def roots_command() -> list[str]:
    """The ``host-bridge`` console script beside this interpreter, else ``python -m host_bridge``."""
    script = Path(sys.executable).with_name("host-bridge")
    return [str(script)] if script.exists() else [sys.executable, "-m", "host_bridge"]


def run_timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, its children included) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def whole_process(root: Path, runs: int) -> None:
    """Print ``host-bridge roots`` against ``git ls-files``, both as processes, run alternately."""
    git_command = ["git", "ls-files", "--cached", "--others", "--exclude-standard"]
    roots = [*roots_command(), "roots", str(root)]
    scratch = Path(tempfile.mkdtemp(prefix="host-bridge-bench-process-"))
    empty = scratch / "empty"
    empty.mkdir()
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "bytecode")
    try:
        samples: dict[str, list[tuple[float, float]]] = {"git": [], "roots": [], "empty": []}
        for run in range(runs + 1):  # the first round warms the caches (and writes the bytecode) and is dropped
            timed = {
                "git": run_timed(git_command, root),
                "roots": run_timed(roots, root, env),
                "empty": run_timed([*roots_command(), "roots", str(empty)], empty, env),
            }
            if run:
                for name, sample in timed.items():
                    samples[name].append(sample)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for index, label in ((0, "wall"), (1, "CPU")):
        ratios = [r[index] / g[index] for r, g in zip(samples["roots"], samples["git"], strict=True)]
        roots_s = statistics.median(r[index] for r in samples["roots"])
        git_s = statistics.median(g[index] for g in samples["git"])
        judged = "; target ≤ 3, judged on this wall-clock ratio" if index == 0 else ""
        print(
            f"roots-process/git-ls-files {label}: {statistics.median(ratios):.2f} "
            f"(median of {runs} paired rounds, range {min(ratios):.2f}–{max(ratios):.2f}; "
            f"roots {roots_s:.2f} s, git {git_s:.2f} s{judged})"
        )
    wall = statistics.median(s[0] for s in samples["empty"])
    cpu = statistics.median(s[1] for s in samples["empty"])
    print(f"roots-process start-up (an empty folder): {wall:.3f} s wall, {cpu:.3f} s CPU")


def median_time(action: Callable[[Path], None], root: Path, runs: int) -> float:
    action(root)
    samples: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        action(root)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dir", type=Path, help="where to build and keep the tree (default: a temp dir)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per in-process measurement (default 5)")
    parser.add_argument(
        "--process-runs", type=int, default=11, help="timed rounds of the whole-process comparison (default 11)"
    )
    options = parser.parse_args()
    temporary = options.dir is None
    root = Path(tempfile.mkdtemp(prefix="host-bridge-bench-")) / "mono" if temporary else options.dir
    root = root.resolve()
    try:
        ensure_tree(root)
        result = detect([WorkspaceFolder(uri=path_to_uri(str(root)))])
        print(f"tree {root}: {len(result.candidates)} candidates, {len(result.notices)} notices")
        runs = options.runs
        git_time = median_time(time_git, root, runs)
        detect_time = median_time(time_detect, root, runs)
        naive_time = median_time(time_naive, root, runs)
        print(
            f"detect/git-ls-files: {detect_time / git_time:.2f} "
            f"(median of {runs}; detect {detect_time:.2f} s, git {git_time:.2f} s)"
        )
        print(
            f"naive-walk/git-ls-files: {naive_time / git_time:.2f} "
            f"(median of {runs}; naive {naive_time:.2f} s, git {git_time:.2f} s)"
        )
        whole_process(root, options.process_runs)
    finally:
        if temporary:
            shutil.rmtree(root.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
