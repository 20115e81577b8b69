"""What the test tiers share: fixture-server configs, record files, folders, processes, the hub harness, the test
editor and the raw sidecar, and the security-requirements check.

Test modules import from here (``from support.servers import python_server``; ``tests`` is on ``sys.path`` through
``pythonpath`` in ``pyproject.toml``); conftest files hold only fixtures.
"""
