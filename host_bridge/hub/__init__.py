"""MCP hub: server configs, one SDK connection per server, roots served, resources aggregated."""
