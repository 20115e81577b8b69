"""The hosts of the core: programs that open it (:func:`host_bridge.core.open_core`) and talk to a person or an editor.

- ``cli``: the ``host-bridge`` command, which dispatches to the hosts;
- ``lsp``: the editor sidecar (``host-bridge serve``), LSP and ``hostBridge/*`` over stdio;
- ``terminal``: ``host-bridge connect``, the same core with consent asked on the terminal.

The core never imports this package (docs/architecture.md, "Architecture invariants"; checked by import-linter).
"""
