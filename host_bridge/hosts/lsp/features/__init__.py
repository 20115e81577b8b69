"""The sidecar's features, made once the core is open (:func:`create_features`, the composition root).

- ``consent``: consent and trust prompts, ``hostBridge/setConsent``;
- ``workspace``: folders, config files and settings → candidates and servers;
- ``notices``: shared folders that become unusable (or usable again) shown to the user;
- ``resources``: the resource requests;
- ``status``: ``hostBridge/status``, ``hostBridge/restartServer``;
- ``gateway``: the socket on which agents use this window's servers (``host-bridge attach``);
- ``running``: this window's servers published for ``host-bridge consent`` in a terminal;
- ``events``: the core's events as editor notifications (not a feature: the hub's ``HubEvents``).

These modules import the core and the models at module level: they are loaded after ``initialize`` was answered
(:mod:`host_bridge.hosts.lsp.deferred`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from host_bridge.core import Core
from host_bridge.hosts.lsp.feature import Feature
from host_bridge.hosts.lsp.features.consent import ConsentFeature
from host_bridge.hosts.lsp.features.gateway import GatewayFeature
from host_bridge.hosts.lsp.features.notices import NoticesFeature
from host_bridge.hosts.lsp.features.resources import ResourcesFeature
from host_bridge.hosts.lsp.features.running import RunningFeature
from host_bridge.hosts.lsp.features.status import StatusFeature
from host_bridge.hosts.lsp.features.workspace import WorkspaceFeature

if TYPE_CHECKING:
    from host_bridge.hosts.lsp.server import HostBridgeServer


def create_features(server: HostBridgeServer, core: Core) -> Sequence[Feature]:
    """Every feature, each given what it needs, in the order their hooks run: notices listen before the workspace is
    first detected; the gateway listens before the workspace's servers start; the workspace is applied last."""
    consent = ConsentFeature(server, core)
    workspace = WorkspaceFeature(server, core, consent)
    return (
        consent,
        NoticesFeature(server, core, workspace),
        ResourcesFeature(server, core),
        StatusFeature(server, core, consent),
        GatewayFeature(server, core),
        RunningFeature(server, core),
        workspace,
    )
