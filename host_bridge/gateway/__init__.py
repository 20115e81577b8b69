"""The consent gateway: agents (VS Code's chat, Claude Code, any MCP client) use the sidecar's running MCP servers.

The sidecar listens on a Unix domain socket (:mod:`host_bridge.gateway.registry` says where, and how ``attach`` finds
it); each connection names one server and then speaks MCP, served by the ``mcp`` SDK's server side and forwarded to
that server's one live connection (:mod:`host_bridge.gateway.service`). ``host-bridge attach``
(:mod:`host_bridge.gateway.attach`) is the stdio end an agent starts.
"""
