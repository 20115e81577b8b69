"""Signing in to HTTP MCP servers: OAuth as the MCP authorization spec defines it, on the ``mcp`` SDK's client.

The SDK's :class:`mcp.client.auth.OAuthClientProvider` does the protocol (discovery, registration, PKCE, scopes,
refresh); this package gives it what a product needs around it: where tokens are kept (:mod:`.vault`,
:mod:`.storage`), the loopback redirect that completes a sign-in (:mod:`.loopback`), the rules for the addresses it
may reach and open (:mod:`.urls`), and the question put to the user through the host (:mod:`.flow`).
"""
