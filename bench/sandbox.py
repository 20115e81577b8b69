"""Benchmark a server's start under the Landlock sandbox against the same start without it (median of 10 each).

For each server: the time from starting the process to having its ``initialize`` answer and sending
``notifications/initialized``, over raw stdio. Sandboxed runs include everything the sandbox adds: computing the
policy (file system lookups), making the private temp folder, and the ``preexec_fn`` that builds the ruleset in the
child; both sides get the hub's parent-death signal. The runs alternate, so drift on a shared machine hits both;
the ratio of the server's CPU time (user + system) is printed beside the wall-clock ratio, as it moves less with the
machine's load.
The wrapper (``python -m host_bridge.sandbox.run``) is timed too, for hosts that cannot pass a ``preexec_fn``: it
adds an interpreter start. Target: sandboxed / unsandboxed ≤ 1.10 with the ``preexec_fn``.

Run: ``.venv/bin/python bench/sandbox.py [--repeat 10]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from host_bridge.procs import die_with_parent
from host_bridge.sandbox.apply import sandboxed_launch
from host_bridge.sandbox.policy import make_private_tmp, policy_for_launch
from host_bridge.sandbox.support import supported

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "tests" / "peers" / "node_modules" / "@modelcontextprotocol"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@dataclass(frozen=True)
class Server:
    """A server to time: its name, command and arguments (``{shared}`` stands for the shared folder)."""

    name: str
    command: str
    args: tuple[str, ...]


Prepared = tuple[str, list[str], dict[str, str], Callable[[], None]]
"""What to start: command, arguments, environment and ``preexec_fn``."""


def start_to_initialized(prepare: Callable[[], Prepared]) -> tuple[float, float]:
    """Seconds from the start (``prepare`` included) to ``initialized`` sent, and the CPU seconds the server used
    in all (user + system, until it exited after stdin closed); the server is then stopped."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    command, args, env, preexec = prepare()
    process = subprocess.Popen(
        [command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tempfile.gettempdir(),
        start_new_session=True,
        preexec_fn=preexec,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        process.stdin.flush()
        while True:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"{command} exited before answering initialize")
            if json.loads(line).get("id") == 1:
                break
        process.stdin.write((json.dumps(INITIALIZED) + "\n").encode())
        process.stdin.flush()
        elapsed = time.perf_counter() - started
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=10)
    options = parser.parse_args()
    ok, reason = supported()
    if not ok or not sys.platform.startswith("linux"):
        sys.exit(f"no Landlock sandbox here: {reason}")
    node = shutil.which("node")
    if node is None:
        sys.exit("node is not on PATH; the reference servers need it (make install)")
    servers = [
        Server("server-filesystem (node)", node, (str(PEERS / "server-filesystem" / "dist" / "index.js"), "{shared}")),
        Server(
            "resources_server.py (Python, mcp SDK)", sys.executable, (str(ROOT / "tests/servers/resources_server.py"),)
        ),
    ]
    home = os.path.expanduser("~")
    with tempfile.TemporaryDirectory() as scratch:
        shared = Path(scratch) / "webapp"
        shared.mkdir()
        print(f"start → initialized, median of {options.repeat} (seconds); {reason}")
        policy_ms, true_plain, true_sandboxed = fixed_cost(servers[0], shared=shared, home=home, scratch=scratch)
        print(
            f"the sandbox's own cost, medians of 50: computing a policy {policy_ms:.2f} ms; "
            f"starting /bin/true {true_plain:.2f} ms unsandboxed, {true_sandboxed:.2f} ms with the preexec_fn"
        )
        for server in servers:
            median = measure(server, shared=shared, home=home, scratch=scratch, repeat=options.repeat)
            (plain, plain_cpu), (sandboxed, sandboxed_cpu), (runner, runner_cpu) = (
                median["plain"],
                median["preexec_fn"],
                median["runner"],
            )
            print(
                f"{server.name}: unsandboxed {plain:.3f}, sandboxed {sandboxed:.3f} → ratio {sandboxed / plain:.3f} "
                f"(target ≤ 1.10; CPU {sandboxed_cpu / plain_cpu:.3f}); through the runner {runner:.3f} → ratio "
                f"{runner / plain:.3f} (CPU {runner_cpu / plain_cpu:.3f})"
            )


def fixed_cost(server: Server, *, shared: Path, home: str, scratch: str) -> tuple[float, float, float]:
    """Milliseconds, load aside: computing ``server``'s policy, and starting ``/bin/true`` without and with it."""
    args = [arg.replace("{shared}", str(shared)) for arg in server.args]
    tmp = make_private_tmp("bench", parent=scratch)
    computing: list[float] = []
    policy = None
    for _ in range(50):
        started = time.perf_counter()
        policy = policy_for_launch(
            server.command, args, cwd=None, env=os.environ, shared_folders=[shared], home=home, private_tmp=tmp
        )
        computing.append(time.perf_counter() - started)
    assert policy is not None
    launch = sandboxed_launch(policy, "/bin/true", [], os.environ, then=die_with_parent)

    def start(preexec: Callable[[], None] | None) -> float:
        started = time.perf_counter()
        subprocess.run(["/bin/true"], preexec_fn=preexec, check=True)
        return time.perf_counter() - started

    plain = [start(die_with_parent) for _ in range(50)]
    sandboxed = [start(launch.preexec_fn) for _ in range(50)]
    milliseconds = [statistics.median(values) * 1000 for values in (computing, plain, sandboxed)]
    return milliseconds[0], milliseconds[1], milliseconds[2]


def measure(server: Server, *, shared: Path, home: str, scratch: str, repeat: int) -> dict[str, tuple[float, float]]:
    """Median start times and CPU times of ``server``: without the sandbox, with the ``preexec_fn``, and through the
    runner."""
    args = [arg.replace("{shared}", str(shared)) for arg in server.args]
    env = dict(os.environ)

    def plain() -> Prepared:
        return server.command, args, env, die_with_parent

    def sandboxed(use_runner: bool) -> Prepared:
        tmp = make_private_tmp("bench", parent=scratch)
        policy = policy_for_launch(
            server.command, args, cwd=None, env=env, shared_folders=[shared], home=home, private_tmp=tmp
        )
        launch = sandboxed_launch(policy, server.command, args, env, then=die_with_parent, use_runner=use_runner)
        assert launch.preexec_fn is not None
        return launch.command, launch.args, launch.env, launch.preexec_fn

    start_to_initialized(plain)  # warm the page cache
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "preexec_fn": [], "runner": []}
    for _ in range(repeat):
        times["plain"].append(start_to_initialized(plain))
        times["preexec_fn"].append(start_to_initialized(lambda: sandboxed(False)))
        times["runner"].append(start_to_initialized(lambda: sandboxed(True)))
    return {
        kind: (statistics.median(t[0] for t in values), statistics.median(t[1] for t in values))
        for kind, values in times.items()
    }


if __name__ == "__main__":
    main()
