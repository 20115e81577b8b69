"""Where sign-in secrets are kept: the OS keyring where there is one, else a private file; the editor's own secret
storage when the editor offers it (the VS Code extension's SecretStorage, through the sidecar's messages).

A vault holds one opaque string per key (a server identity's key): :mod:`host_bridge.auth.storage` puts a server's
tokens and client registration in it as JSON. Nothing here ever logs a value.

* :class:`FileVault` — ``tokens.json`` in the storage folder, mode 0600, refused when it is a symlink, not the
  user's, or writable by others (as the consent file is); changed under its own lock file, written atomically. The
  sandbox never grants the storage folder to a server (it is neither a shared folder nor a runtime path).
* :class:`KeyringVault` — the Python ``keyring`` package (``pip install host-bridge[keyring]``): macOS Keychain,
  Windows Credential Locker, the Secret Service on a Linux desktop. Where it has no usable backend (a headless Linux
  machine: no D-Bus session, no unlocked collection) or fails, :func:`default_vault` falls back to the file and says
  so once in the log.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread

from host_bridge.consent.files import read_all, remove_stale_temps, write_private_temp
from host_bridge.consent.lock import FileLock
from host_bridge.private_files import UnsafeFileError, check_private_dir, open_private

logger = logging.getLogger(__name__)

TOKENS_FILE = "tokens.json"
"""The file vault's name in the storage folder."""
KEYRING_SERVICE = "MCP Host Bridge"
"""The service name of host_bridge's entries in the OS keyring."""
_FORMAT = 1


class VaultError(Exception):
    """The vault could not be read or written; the message says which and what to do."""


class SecretVault(Protocol):
    """One opaque secret string per key."""

    @property
    def description(self) -> str:
        """Where the secrets are, for messages (``the OS keyring``, ``/path/tokens.json`` …)."""
        ...

    async def get(self, key: str) -> str | None:
        """The value kept under ``key``, or ``None``."""
        ...

    async def put(self, key: str, value: str) -> None:
        """Keep ``value`` under ``key`` (replacing what was there)."""
        ...

    async def delete(self, key: str) -> bool:
        """Forget ``key``; whether there was something to forget."""
        ...


class FileVault:
    """Secrets in ``tokens.json`` (0600) in a private storage folder; see the module docstring."""

    def __init__(self, storage_dir: str | os.PathLike[str], *, lock_timeout: float = 5.0) -> None:
        self.storage_dir = Path(storage_dir)
        """The folder holding the file (created 0700 when missing)."""
        self.path = self.storage_dir / TOKENS_FILE
        """The file."""
        self.description = str(self.path)
        self._lock_timeout = lock_timeout

    async def get(self, key: str) -> str | None:
        """The value kept under ``key``, or ``None``."""
        return (await anyio.to_thread.run_sync(self._read)).get(key)

    async def put(self, key: str, value: str) -> None:
        """Keep ``value`` under ``key``."""
        await anyio.to_thread.run_sync(partial(self._change, key, value))

    async def delete(self, key: str) -> bool:
        """Forget ``key``; whether it was there."""
        return await anyio.to_thread.run_sync(partial(self._change, key, None))

    def keys(self) -> list[str]:
        """Every key kept (blocking: for the command line)."""
        return sorted(self._read())

    def _read(self) -> dict[str, str]:
        try:
            fd = open_private(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return {}
        except (UnsafeFileError, OSError) as error:
            raise VaultError(f"cannot read the sign-in tokens in {self.path}: {error}") from None
        try:
            data = read_all(fd)
        finally:
            os.close(fd)
        try:
            document = json.loads(data)
            secrets = document["secrets"]
            if document.get("format") != _FORMAT or not isinstance(secrets, dict):
                raise ValueError("unknown format")
        except (ValueError, KeyError, TypeError):
            raise VaultError(
                f"{self.path} is not a sign-in token file host_bridge can read; remove it and sign in again"
            ) from None
        return {str(k): str(v) for k, v in secrets.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]

    def _change(self, key: str, value: str | None) -> bool:
        try:
            self.storage_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            check_private_dir(self.storage_dir)
            with FileLock(self.storage_dir / f"{TOKENS_FILE}.lock", timeout=self._lock_timeout):
                secrets = self._read()
                existed = key in secrets
                if value is None:
                    if not existed:
                        return False
                    del secrets[key]
                else:
                    secrets[key] = value
                remove_stale_temps(self.path)
                payload = json.dumps({"format": _FORMAT, "secrets": secrets}, sort_keys=True).encode()
                temp, _ = write_private_temp(self.path, payload)
                try:
                    os.replace(temp, self.path)
                except BaseException:
                    temp.unlink(missing_ok=True)
                    raise
                return existed
        except (UnsafeFileError, OSError, TimeoutError) as error:
            raise VaultError(f"cannot save the sign-in tokens in {self.path}: {error}") from None


class KeyringVault:
    """Secrets in the OS keyring through the ``keyring`` package; see the module docstring."""

    def __init__(self, keyring: Any) -> None:
        self._keyring = keyring
        self.description = f"the OS keyring ({type(keyring.get_keyring()).__name__})"

    async def get(self, key: str) -> str | None:
        """The value kept under ``key``, or ``None``."""
        return await self._call(self._keyring.get_password, KEYRING_SERVICE, key)

    async def put(self, key: str, value: str) -> None:
        """Keep ``value`` under ``key``."""
        await self._call(self._keyring.set_password, KEYRING_SERVICE, key, value)

    async def delete(self, key: str) -> bool:
        """Forget ``key``; whether it was there."""
        if await self.get(key) is None:
            return False
        await self._call(self._keyring.delete_password, KEYRING_SERVICE, key)
        return True

    async def _call(self, function: Callable[..., Any], *args: str) -> Any:
        try:
            return await anyio.to_thread.run_sync(partial(function, *args))
        except Exception as error:
            raise VaultError(f"the OS keyring refused ({type(error).__name__}: {error})") from None


class FallbackVault:
    """The keyring, falling back to the file for good once the keyring fails (said once in the log)."""

    def __init__(self, first: SecretVault, fallback: SecretVault) -> None:
        self._first: SecretVault | None = first
        self._fallback = fallback

    @property
    def description(self) -> str:
        """Where the secrets are now."""
        return (self._first or self._fallback).description

    async def get(self, key: str) -> str | None:
        """The value kept under ``key``, or ``None``."""
        if self._first is not None:
            try:
                value = await self._first.get(key)
            except VaultError as error:
                self._give_up(error)
            else:
                return value if value is not None else await self._fallback.get(key)
        return await self._fallback.get(key)

    async def put(self, key: str, value: str) -> None:
        """Keep ``value`` under ``key``."""
        if self._first is not None:
            try:
                await self._first.put(key, value)
            except VaultError as error:
                self._give_up(error)
            else:
                await self._fallback.delete(key)
                return
        await self._fallback.put(key, value)

    async def delete(self, key: str) -> bool:
        """Forget ``key`` in both."""
        existed = False
        if self._first is not None:
            try:
                existed = await self._first.delete(key)
            except VaultError as error:
                self._give_up(error)
        return await self._fallback.delete(key) or existed

    def _give_up(self, error: VaultError) -> None:
        logger.warning("%s; sign-in tokens are kept in %s instead", error, self._fallback.description)
        self._first = None


def _usable_keyring() -> Any | None:
    """The ``keyring`` module when it is installed and has a real backend here, else ``None``."""
    if os.environ.get("HOST_BRIDGE_NO_KEYRING"):
        return None
    try:
        module: Any = importlib.import_module("keyring")
        fail: Any = importlib.import_module("keyring.backends.fail")
    except ImportError:
        return None
    try:
        backend: Any = module.get_keyring()
    except Exception:
        return None
    failing: Any = fail.Keyring
    name = type(backend).__module__ + "." + type(backend).__name__
    empty_chain = "chainer" in name.lower() and not getattr(backend, "backends", None)
    if isinstance(backend, failing) or ".null" in name or empty_chain:
        return None
    return module


def default_vault(storage_dir: str | os.PathLike[str]) -> SecretVault:
    """The OS keyring where the ``keyring`` package has a usable backend, else (and when it fails) ``tokens.json``
    in ``storage_dir``. ``HOST_BRIDGE_NO_KEYRING=1`` keeps tokens in the file."""
    file = FileVault(storage_dir)
    keyring = _usable_keyring()
    return file if keyring is None else FallbackVault(KeyringVault(keyring), file)
