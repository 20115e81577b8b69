"""``python -m host_bridge`` runs the command line."""

import sys

from host_bridge.cli import main

sys.exit(main())
