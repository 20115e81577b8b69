"""``python -m host_bridge.sandbox.run POLICY_JSON -- COMMAND [ARGS…]``: apply a policy, then become COMMAND.

For hosts that cannot pass a ``preexec_fn``. POLICY_JSON is ``SandboxPolicy.to_json()``. The runner confines itself
with Landlock and ``exec``s COMMAND in its own place (same process id, no process left in between). Standard library
only, so it starts fast. Exit status when COMMAND never runs: 2 for a bad command line or policy, 125 when the
sandbox cannot be applied (never started unconfined), 126 when COMMAND cannot be executed, 127 when it is not found.
"""

from __future__ import annotations

import json
import os
import sys

from host_bridge.sandbox.rules import describe_failure, plan_from_wire

USAGE = "usage: python -m host_bridge.sandbox.run POLICY_JSON -- COMMAND [ARGS...]"


def main(argv: list[str]) -> int:
    """Run the command line ``argv`` (without the program name); returns only when COMMAND did not start."""
    if len(argv) < 3 or argv[1] != "--":
        return _fail(2, f"expected a policy, '--' and a command. {USAGE}")
    try:
        data = json.loads(argv[0])
        if not isinstance(data, dict):
            raise ValueError("the policy is not a JSON object")
        plan = plan_from_wire(data)  # pyright: ignore[reportUnknownArgumentType]
    except ValueError as error:
        return _fail(2, f"the policy is not usable: {error}. {USAGE}")
    if plan is not None:
        try:
            plan.apply()
        except OSError as error:
            return _fail(
                125,
                f"{describe_failure(error)}; the server was not started "
                '(set its sandbox to "off" to start it without one)',
            )
    command = argv[2]
    try:
        if os.sep in command:
            os.execv(command, [command, *argv[3:]])
        os.execvp(command, [command, *argv[3:]])
    except FileNotFoundError:
        return _fail(127, f"cannot execute {command!r}: not found")
    except OSError as error:
        return _fail(126, f"cannot execute the server: [Errno {error.errno}] {error.strerror}: {command!r}")


def _fail(status: int, message: str) -> int:
    print(f"host_bridge sandbox: {message}", file=sys.stderr, flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
