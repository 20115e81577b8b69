"""Names of the ``hostBridge/*`` messages (DESIGN.md, "Editor ↔ sidecar contract").

Kept apart from :mod:`host_bridge.hosts.lsp.protocol` (the pydantic models of their params and results) so that
features can register their handlers without importing pydantic before ``initialize`` is answered.
"""

ASK_CONSENT = "hostBridge/askConsent"
SERVER_CHANGED = "hostBridge/serverChanged"
RESOURCES_CHANGED = "hostBridge/resourcesChanged"
RESOURCE_UPDATED = "hostBridge/resourceUpdated"
STATUS = "hostBridge/status"
LIST_RESOURCES = "hostBridge/listResources"
LIST_RESOURCE_TEMPLATES = "hostBridge/listResourceTemplates"
COMPLETE_ARGUMENT = "hostBridge/completeArgument"
READ_RESOURCE = "hostBridge/readResource"
SUBSCRIBE = "hostBridge/subscribe"
UNSUBSCRIBE = "hostBridge/unsubscribe"
SET_CONSENT = "hostBridge/setConsent"
RESTART_SERVER = "hostBridge/restartServer"
