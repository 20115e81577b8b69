"""``host-bridge connect``: the core run from a terminal, with consent asked on the terminal."""
