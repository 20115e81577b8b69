"""Resources of every running MCP server, brought together for the editor's pickers and the terminal.

:class:`~host_bridge.hub.resources.broker.ResourceBroker` (``broker``) is the facade the hub owns; each concern is a
module of its own:

- ``models``: what the broker answers (wire models, no ``mcp`` import) and its limits;
- ``labels``: server text made fit to show;
- ``cursors``: signed, opaque listing cursors;
- ``sources``: what the broker needs of the hub, and how failed requests become hub errors;
- ``items``: a server's resources and templates as the editor receives them;
- ``cache``: each running server's list of resources, fetched once and kept until it changes;
- ``listing``: resources and templates across servers, page by page;
- ``reads``: completion, template expansion and size-capped reads;
- ``subscriptions``: subscriptions, listen streams and coalesced notifications.

What servers send is untrusted: display fields are sanitized, URIs are kept verbatim and only ever sent back to the
server that named them, reads are bounded and base64 is validated. This package's ``__init__`` imports nothing, so
importing the wire models does not load the SDK.
"""
