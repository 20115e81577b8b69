"""OS sandbox for stdio MCP servers: file access outside system and runtime paths is exactly the consented folders.

Import the parts from their modules (this package imports nothing, so the stdlib-only runner starts fast):

* :mod:`~host_bridge.sandbox.policy` — :func:`policy_for_launch` computes a :class:`SandboxPolicy`.
* :mod:`~host_bridge.sandbox.apply` — :func:`sandboxed_launch` / :func:`sandbox_preexec` start a server under it.
* :mod:`~host_bridge.sandbox.run` — ``python -m host_bridge.sandbox.run POLICY_JSON -- CMD ARGS``.
* :mod:`~host_bridge.sandbox.support` — :func:`supported` says what this platform enforces and why.
* :mod:`~host_bridge.sandbox.refusals` — :func:`refused_paths` turns a server's stderr into consent questions.
* :mod:`~host_bridge.sandbox.landlock` and :mod:`~host_bridge.sandbox.macos` — the two mechanisms.

Core code: standard library and pydantic only; never imports pygls, lsprotocol or mcp.
"""
