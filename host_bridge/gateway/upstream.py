"""Requests to a server's live ``mcp.Client`` as plain JSON, for forwarding without rebuilding the result.

The SDK's typed calls validate every result against the protocol's models, which is right for a client and wasted
work for a proxy whose agent validates the same result again: for a listing of 10 000 resources it is most of the
time. :func:`raw_request` goes one layer down, to the session's :class:`mcp.shared.dispatcher.Dispatcher` (the SDK's
own JSON-RPC layer, which correlates ids, relays progress and sends ``notifications/cancelled`` when the caller is
cancelled), after the session's per-request stamp (the 2026-07-28 ``_meta`` envelope, HTTP headers). Neither is
public in ``mcp`` 2.3; ``tests/unit/test_gateway.py`` pins both, so an SDK change fails a test, not users.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from mcp import Client
from mcp.shared.dispatcher import CallOptions, Outbound

RESERVED_META_PREFIX = "io.modelcontextprotocol/"
"""``_meta`` keys of the 2026-07-28 envelope; an agent's never reach the server (the session stamps its own)."""


class _Stamp(Protocol):
    def __call__(self, data: dict[str, Any], opts: CallOptions) -> None: ...


def outgoing_params(params: Mapping[str, Any] | None) -> tuple[dict[str, Any], object | None]:
    """An agent's params as they go to the server, and the agent's progress token.

    ``_meta.progressToken`` is taken out (the dispatcher puts in its own and relays the server's progress), and so are
    the agent's envelope keys; everything else is kept as the agent sent it.
    """
    out = dict(params) if params else {}
    raw_meta = out.pop("_meta", None)
    token: object | None = None
    if isinstance(raw_meta, Mapping):
        meta = dict(cast(Mapping[str, Any], raw_meta))
        token = meta.pop("progressToken", None)
        for key in [k for k in meta if k.startswith(RESERVED_META_PREFIX)]:
            del meta[key]
        if meta:
            out["_meta"] = meta
    return out, token


async def raw_request(client: Client, method: str, params: dict[str, Any], opts: CallOptions) -> dict[str, Any]:
    """Send ``method`` with ``params`` on the client's session and return the result as the server sent it.

    Raises :class:`mcp.MCPError` for an error answer, a time-out (``opts["timeout"]``) or a closed connection, as the
    SDK's typed calls do. ``params`` is modified (the stamp adds to it).
    """
    session = client.session
    stamp = cast(_Stamp, session._stamp)  # pyright: ignore[reportPrivateUsage]
    dispatcher = cast(Outbound, session._dispatcher)  # pyright: ignore[reportPrivateUsage]
    data: dict[str, Any] = {"method": method, "params": params}
    stamp(data, opts)
    return await dispatcher.send_raw_request(method, data.get("params") or None, opts)
