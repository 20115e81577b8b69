"""``host-bridge connect``: the core run from a terminal, with consent asked on the terminal.

- ``options``: the command line validated into :class:`~host_bridge.hosts.terminal.options.ConnectOptions`, the
  servers it names, usage errors;
- ``prompts``: consent questions on the terminal;
- ``output``: what is printed — lines, the hub's events, the tables (one formatter);
- ``session``: detect, ask, then run the core for what was asked (``connect``);
- ``consent``: the saved decisions listed and changed (``host-bridge consent``).
"""
