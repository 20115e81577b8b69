"""The params and results of the ``hostBridge/*`` messages that are not hub models, and the initialization options.

Which model belongs to which message is declared in :mod:`host_bridge.hosts.lsp.messages`; results that are hub models
(:class:`~host_bridge.hub.models.ServerStatus`, :class:`~host_bridge.hub.resources.models.ResourcePage` …) are sent as
they are. Mirrored 1:1 by ``vscode-extension/src/protocol.ts``; shapes and meanings are in docs/protocol.md. Incoming
params are validated once, with these models; handlers work with the models only. Neither this module nor the models
it uses import ``mcp``.
"""

from __future__ import annotations

import logging
from typing import Any, Literal, Self, cast

from pydantic import Field, ValidationError

from host_bridge.hub.models import ServerRef, ServerStatus
from host_bridge.hub.resources.models import TemplateItem
from host_bridge.roots import VisibleThrough
from host_bridge.wire import WireModel
from host_bridge.workspace.models import Candidate, DetectionLimits

logger = logging.getLogger(__name__)


class InitializationOptions(WireModel):
    """``initializationOptions`` of ``initialize``; every field is optional and defaulted."""

    storage_dir: str | None = None
    """Where the consent store and audit log live; default: the platform's user data dir."""
    servers: dict[str, Any] = Field(default_factory=dict[str, Any])
    """``{id: entry}`` in the ``.vscode/mcp.json`` ``servers`` format; entries are checked by the loader."""
    read_workspace_config: bool = True
    """Also read ``.vscode/mcp.json`` and ``.mcp.json`` in each workspace folder."""
    consent_timeout: float = Field(default=300.0, gt=0)
    """Seconds a consent or trust prompt may stay unanswered; then it counts as *not allowed*."""
    sandbox: Literal["enforce", "off"] = "enforce"
    """The OS sandbox of stdio servers whose config does not say: ``enforce`` (where the OS supports it: Landlock on
    Linux) confines each to its shared folders plus system and runtime paths; ``off`` does not."""
    network: Literal["on", "off"] = "on"
    """The network of sandboxed stdio servers whose config does not say: ``off`` has the kernel refuse them TCP (and,
    with seccomp, other protocols). A workspace file's ``"network": "on"`` does not override ``off``."""
    detection: DetectionLimits = Field(default_factory=DetectionLimits)
    """Bounds of candidate detection (``maxDepth``, ``maxCandidates``, ``maxEntries``, ``gitTimeout``, ``deadline``);
    the notices that say a bound was hit name these."""

    @classmethod
    def lenient(cls, raw: object) -> tuple[Self, list[str]]:
        """Validate ``raw`` field by field: a bad value becomes a warning and that field's default."""
        warnings: list[str] = []
        if raw is None:
            return cls(), warnings
        if not isinstance(raw, dict):
            return cls(), [f"initializationOptions must be an object, not {type(raw).__name__}; using defaults"]
        given = {str(k): v for k, v in cast(dict[object, object], raw).items()}
        accepted: dict[str, object] = {}
        for name, field in cls.model_fields.items():
            alias = field.alias or name
            if alias not in given:
                continue
            try:
                cls.model_validate({alias: given[alias]})
            except ValidationError as error:
                reason = "; ".join(e["msg"] for e in error.errors())
                warnings.append(f"initializationOptions.{alias} is invalid ({reason}); using the default")
                continue
            accepted[alias] = given[alias]
        unknown = sorted(set(given) - {f.alias or n for n, f in cls.model_fields.items()})
        if unknown:
            warnings.append(f"initializationOptions: ignoring unknown keys {', '.join(unknown)}")
        return cls.model_validate(accepted), warnings


DecisionName = Literal["allow", "allowSession", "allowReadOnly", "allowSessionReadOnly", "deny"]
"""A folder answer: share it to read and write (``allow``, ``allowSession`` for this session only), share it read
only (``allowReadOnly``, ``allowSessionReadOnly``: its sandbox refuses every write there), or not (``deny``)."""


class StatusParams(WireModel):
    """``hostBridge/status`` params (none)."""


class StatusResult(WireModel):
    """``hostBridge/status`` result."""

    servers: tuple[ServerStatus, ...]
    """Every configured server, in configuration order."""
    candidates: tuple[Candidate, ...]
    """Every folder that could be shared."""
    ready: bool = True
    """``false`` when answered before the workspace was first read (a slow or hostile repository): servers and
    candidates may still be missing; ask again (``hostBridge/serverChanged`` reports each server as it comes)."""


class ServerParams(WireModel):
    """Params naming one server (``hostBridge/restartServer``)."""

    server: str
    """Server id."""


class ListResourcesParams(WireModel):
    """``hostBridge/listResources`` params."""

    server: str | None = None
    """One server; all running servers with resources when absent."""
    cursor: str | None = None
    """Opaque cursor from a previous page."""
    query: str | None = None
    """Keep items whose name, title, URI or description contains it (ignoring case)."""
    limit: int | None = Field(default=None, ge=1)
    """At most this many resources in the page (and at most 10 000), answered as soon as some are known; without
    it, each server's next page as the server paged it."""
    work_done_token: int | str | None = None
    """LSP ``workDoneToken``: ``$/progress`` begin/report/end is sent under it if the editor supports
    ``window.workDoneProgress``."""


class ListResourceTemplatesParams(WireModel):
    """``hostBridge/listResourceTemplates`` params."""

    server: str | None = None
    """One server; all when absent."""


class ListResourceTemplatesResult(WireModel):
    """``hostBridge/listResourceTemplates`` result."""

    items: tuple[TemplateItem, ...]
    """Templates of the server(s), in server order."""


class CompleteArgumentParams(WireModel):
    """``hostBridge/completeArgument`` params."""

    server: str
    """Server id."""
    uri_template: str
    """The template whose variable is completed."""
    name: str
    """The variable's name."""
    value: str
    """What the user typed so far."""
    arguments: dict[str, str | list[str]] | None = None
    """Variables already filled in: a string, or a list of strings (passed to the server comma-joined)."""


class ReadResourceParams(WireModel):
    """``hostBridge/readResource`` params: either ``uri`` or ``uriTemplate`` with ``arguments``."""

    server: str
    """Server id."""
    uri: str | None = None
    """The resource to read."""
    uri_template: str | None = None
    """A template to expand with :attr:`arguments` instead of :attr:`uri`."""
    arguments: dict[str, str | list[str]] | None = None
    """Template variables: a string, or a list of strings (RFC 6570 lists; an empty list is undefined)."""


class SubscriptionParams(WireModel):
    """``hostBridge/subscribe`` and ``hostBridge/unsubscribe`` params."""

    server: str
    """Server id."""
    uri: str
    """The resource."""


class SetConsentParams(WireModel):
    """``hostBridge/setConsent`` params."""

    server: str
    """Server id in this sidecar; the decision is recorded for that server's identity (where it is defined, its
    id, its launch configuration), so another server with the same command line is not affected."""
    uri: str
    """``file://`` URI of the folder."""
    decision: Literal["allow", "allowSession", "allowReadOnly", "allowSessionReadOnly", "deny", "readOnly", "forget"]
    """The user's decision; ``allowReadOnly``/``allowSessionReadOnly`` share the folder read only; ``forget`` removes
    the record (the folder may be asked about again); ``readOnly`` lets the server's sandbox read it without sharing
    it (after a refusal)."""


class SetConsentResult(WireModel):
    """``hostBridge/setConsent`` result: whether the decision was saved, and what the user should know."""

    saved: bool
    """The decision was written to the consent store (``allowSession`` is never written and reports ``true``)."""
    applied: Literal["allow", "allowSession", "allowReadOnly", "allowSessionReadOnly", "deny", "readOnly", "none"]
    """What holds now for this folder and server: when saving failed, a deny or forget still applies and an allow
    holds for this session only; ``none`` means undecided (not shared)."""
    visible_through: str | None = None
    """URI of a shared folder containing this one: the server still sees it through that folder."""
    message: str | None = None
    """A sentence for the user when the decision was not saved or the folder stays visible through its parent."""


class AskConsentParams(WireModel):
    """``hostBridge/askConsent`` params (sidecar → editor)."""

    server: ServerRef
    """The server asking."""
    roots: tuple[Candidate, ...]
    """Folders without a decision for this server (folders it already sees through a shared one are not asked)."""
    trust_required: bool
    """The server is defined by a workspace file and is started only if the user trusts it."""
    visible_through: tuple[VisibleThrough, ...] = ()
    """Candidate folders the server already sees because a folder containing them is shared with it."""
    reason: str | None = None
    """Why this question comes now, when it is not the usual first question: e.g. the server's sandbox refused it a
    path inside one of these folders."""
    batch: tuple[ServerRef, ...] = ()
    """With ``trustRequired``: the other servers of the same workspace file that wait for trust. The trust answer
    applies to all of them, so every one must be shown; their folders are asked about once each runs."""


class RootDecision(WireModel):
    """One folder's answer in :class:`AskConsentResult`."""

    uri: str
    """A candidate URI from the request."""
    decision: DecisionName
    """The answer for that folder."""


class AskConsentResult(WireModel):
    """``hostBridge/askConsent`` result; a root missing from :attr:`decisions` is *not allowed*."""

    trust: bool | None = None
    """Answer to ``trustRequired``; absent means not trusted."""
    decisions: tuple[RootDecision, ...] = ()
    """Answers per folder."""


class ServerNotification(WireModel):
    """``hostBridge/resourcesChanged`` params."""

    server: str
    """Server id."""


class ResourceUpdatedNotification(WireModel):
    """``hostBridge/resourceUpdated`` params."""

    server: str
    """Server id."""
    uri: str
    """The subscribed resource that changed."""
