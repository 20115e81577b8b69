"""``python -m host_bridge`` runs the command line."""

import sys

from host_bridge.hosts.cli import main

sys.exit(main())
