"""Fixture MCP server that needs a sign-in: the SDK's ``MCPServer`` with its own OAuth authorization server, over
streamable HTTP on 127.0.0.1.

It is both the protected resource (``http://127.0.0.1:PORT/mcp``, protected-resource metadata at
``/.well-known/oauth-protected-resource/mcp``) and the authorization server (metadata, dynamic registration,
``/authorize``, ``/token``, ``/revoke``), all from the SDK's server side. Its authorization endpoint approves at once:
it redirects straight back to the client's ``redirect_uri`` with a code, as a person who clicks "Allow" would. A test
plays the browser by fetching the sign-in address and following that redirect.

Options: ``--port`` (0 picks one), ``--token-seconds N`` (access tokens expire after N seconds; refresh tokens do
not), ``--scope`` (the scope it requires; default ``mcp``). ``POST /test/revoke`` revokes every token it issued (a
server that revoked a sign-in). ``--record PATH`` receives JSON lines: ``{"listening": port}``, ``{"register":
client_id}``, ``{"authorize": {"client_id", "scope", "redirect_uri"}}``, ``{"token": grant_type, "access_token": …,
"refresh_token": …}`` (so that a test can look for the values in logs), ``{"revoked": count}`` and ``{"call": name,
"client_id": …}`` per tool call.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import socket
import time
import warnings
from pathlib import Path
from typing import Any

import uvicorn
from fixture_support import RecordFile, configure_logging
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver.server import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.exceptions import MCPDeprecationWarning
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

logger = configure_logging("oauth_server")

HOST = "127.0.0.1"
PATH = "/mcp"


class AutoApprove:
    """An in-memory authorization server whose user always says yes (the SDK's provider protocol)."""

    def __init__(self, record: RecordFile, token_seconds: int | None) -> None:
        self.record = record
        self.token_seconds = token_seconds
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.record.write({"register": client_info.client_id})

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.record.write(
            {
                "authorize": {
                    "client_id": client.client_id,
                    "scope": " ".join(params.scopes or []),
                    "redirect_uri": str(params.redirect_uri),
                }
            }
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> Any:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(client, authorization_code.scopes, authorization_code.resource, "authorization_code")

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> Any:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client, scopes or refresh_token.scopes, None, "refresh_token")

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access.get(token)
        if access is None or (access.expires_at is not None and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        raise TokenError(error="unsupported_grant_type", error_description="this server has no JWT bearer grant")

    def revoke_all(self) -> int:
        count = len(self.access) + len(self.refresh)
        self.access.clear()
        self.refresh.clear()
        self.record.write({"revoked": count})
        return count

    def _issue(
        self, client: OAuthClientInformationFull, scopes: list[str], resource: str | None, grant: str
    ) -> OAuthToken:
        access = "fixture-access-" + secrets.token_urlsafe(24)
        refresh = "fixture-refresh-" + secrets.token_urlsafe(24)
        expires = int(time.time()) + self.token_seconds if self.token_seconds else None
        self.access[access] = AccessToken(
            token=access, client_id=client.client_id or "", scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client.client_id or "", scopes=scopes)
        self.record.write({"token": grant, "access_token": access, "refresh_token": refresh})
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.token_seconds,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )


def build(port: int, record: RecordFile, token_seconds: int | None, scope: str) -> tuple[MCPServer, AutoApprove]:
    """The server and its authorization server."""
    base = f"http://{HOST}:{port}"
    provider = AutoApprove(record, token_seconds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        settings = AuthSettings(
            issuer_url=base,  # pyright: ignore[reportArgumentType]
            resource_server_url=base + PATH,  # pyright: ignore[reportArgumentType]
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[scope], default_scopes=[scope]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=[scope],
            validate_token_resource=False,
        )
    server = MCPServer(name="oauth-fixture", auth_server_provider=provider, auth=settings)

    @server.tool()
    async def whoami() -> str:
        """Say that the caller is signed in."""
        record.write({"call": "whoami"})
        return "signed in"

    @server.resource("test://signed-in", name="signed-in", mime_type="text/plain")
    async def signed_in() -> str:
        """A resource only a signed-in client can read."""
        return "you are signed in"

    @server.custom_route("/test/revoke", methods=["POST"])
    async def revoke(request: Request) -> Response:
        """Revoke every token (what a user does on the server's account page)."""
        return JSONResponse({"revoked": provider.revoke_all()})

    return server, provider


class RecordingServer(uvicorn.Server):
    """Records ``{"listening": port}`` once uvicorn serves."""

    def __init__(self, config: uvicorn.Config, record: RecordFile, port: int) -> None:
        super().__init__(config)
        self.record = record
        self.port = port

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            logger.info("oauth_server: listening on http://%s:%d%s", HOST, self.port, PATH)
            self.record.write({"listening": self.port})


def main() -> None:
    """Bind, then serve until killed."""
    parser = argparse.ArgumentParser(description="Fixture MCP server with its own OAuth authorization server.")
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1; 0 picks a free one")
    parser.add_argument("--token-seconds", type=int, help="access tokens expire after this many seconds")
    parser.add_argument("--scope", default="mcp", help="the scope the server requires")
    parser.add_argument("--record", type=Path, help="append observations here as JSON lines")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    record = RecordFile(args.record)
    server, _ = build(port, record, args.token_seconds, args.scope)
    app = server.streamable_http_app(streamable_http_path=PATH, host=HOST)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    asyncio.run(RecordingServer(config, record, port).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
