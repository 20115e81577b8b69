"""A server's sign-in kept between runs: its tokens and its client registration, per server identity.

The SDK's OAuth client reads and writes them through :class:`IdentityTokenStorage` (its ``TokenStorage``
protocol). They are kept as one JSON record per server identity key in a :class:`~host_bridge.auth.vault.SecretVault`,
so a server whose URL, headers or sign-in settings change is a new identity that signs in anew, and two servers
never share a token. The record also holds when the access token expires (an absolute time), which the SDK keeps
in memory only: after a restart an expired token is refreshed instead of being sent.
"""

from __future__ import annotations

import logging
import time

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import BaseModel, ValidationError

from host_bridge.auth.vault import SecretVault

logger = logging.getLogger(__name__)


class SignInRecord(BaseModel):
    """What is kept of one server's sign-in."""

    tokens: OAuthToken | None = None
    """The last tokens the authorization server issued."""
    expires_at: float | None = None
    """When the access token expires (seconds since the epoch), if the server said."""
    client_info: OAuthClientInformationFull | None = None
    """The client registration (dynamic, or a client ID metadata document's), reused until it stops working."""


class IdentityTokenStorage:
    """The SDK's ``TokenStorage`` over one identity's record in a vault.

    ``preregistered`` is a client the user configured (client ID and secret): it is always the client used, and never
    written to the vault. ``on_tokens`` hears when tokens were saved (a sign-in or refresh completed).
    """

    def __init__(
        self, vault: SecretVault, key: str, *, preregistered: OAuthClientInformationFull | None = None
    ) -> None:
        self.vault = vault
        """Where the record is kept."""
        self.key = key
        """The server identity's key."""
        self.preregistered = preregistered
        """The configured client, if any."""
        self._record: SignInRecord | None = None

    async def record(self) -> SignInRecord:
        """The kept record (read once, then from memory); an unreadable one counts as none."""
        if self._record is None:
            text = await self.vault.get(self.key)
            record = SignInRecord()
            if text is not None:
                try:
                    record = SignInRecord.model_validate_json(text)
                except ValidationError:
                    logger.warning("the kept sign-in of a server could not be read; it signs in again")
            self._record = record
        return self._record

    async def get_tokens(self) -> OAuthToken | None:
        """The kept tokens."""
        return (await self.record()).tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep new tokens (and when they expire)."""
        record = await self.record()
        record.tokens = tokens
        record.expires_at = time.time() + tokens.expires_in if tokens.expires_in else None
        await self._save(record)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The configured client, else the kept registration."""
        if self.preregistered is not None:
            return self.preregistered
        return (await self.record()).client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep a new registration (a configured client is never replaced)."""
        if self.preregistered is not None:
            return
        record = await self.record()
        record.client_info = client_info
        await self._save(record)

    async def forget(self) -> bool:
        """Drop the whole record (sign out); whether there was one."""
        self._record = SignInRecord()
        return await self.vault.delete(self.key)

    async def _save(self, record: SignInRecord) -> None:
        await self.vault.put(self.key, record.model_dump_json(exclude_none=True))
