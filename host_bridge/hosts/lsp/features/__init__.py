"""One module per feature, each with ``setup(server)``; :func:`host_bridge.hosts.lsp.server.create_server` calls
them."""
