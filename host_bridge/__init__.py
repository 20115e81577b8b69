"""host_bridge: share the editor's workspace with MCP servers, with consent, and proxy their resources."""

__version__ = "0.1.0"
