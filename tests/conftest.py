"""Shared test configuration: anyio tests run on asyncio."""

from __future__ import annotations

import os

import pytest

# Sign-in tokens of the tests' servers go to their storage folder's tokens.json, never to the OS keyring of the
# machine running the tests (the sidecars and commands the tests start inherit this).
os.environ["HOST_BRIDGE_NO_KEYRING"] = "1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
