"""How requests fail, in process: every failure a feature raises on purpose reaches the editor as the JSON-RPC error
that ``feature.ERRORS`` maps it to, naming what was wrong (docs/protocol.md "Errors")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from support.inprocess import in_process
from support.sidecar import options

from host_bridge.hub.errors import INVALID_PARAMS, SERVER_NOT_RUNNING

pytestmark = pytest.mark.anyio


async def refused(client: Any, method: str, params: object) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as raised:
        await client.protocol.send_request_async(method, params)
    return raised.value


async def test_a_request_before_initialize_is_refused_as_not_ready() -> None:
    async with in_process() as sidecar:
        sidecar.client.capabilities = types.ClientCapabilities()  # pytest-lsp checks requests against them
        error = await refused(sidecar.client, "hostBridge/listResources", {})
    assert error.code == SERVER_NOT_RUNNING
    assert "initialize" in error.message


async def test_bad_params_unknown_servers_and_bad_uris_are_invalid_params_naming_what_was_wrong(
    tmp_path: Path,
) -> None:
    (tmp_path / "ws").mkdir()
    async with in_process() as sidecar:
        client = sidecar.client
        await client.start_session([tmp_path / "ws"], options(tmp_path))
        await client.status()
        not_object = await refused(client, "hostBridge/readResource", [1])
        missing = await refused(client, "hostBridge/readResource", {"uri": "test://x"})
        unknown = await refused(client, "hostBridge/readResource", {"server": "nope", "uri": "test://x"})
        bad_uri = await refused(
            client, "hostBridge/setConsent", {"server": "nope", "uri": "http://x/", "decision": "allow"}
        )
        bad_decision = await refused(
            client, "hostBridge/setConsent", {"server": "x", "uri": (tmp_path / "ws").as_uri(), "decision": "maybe"}
        )
    assert not_object.code == INVALID_PARAMS and "params must be an object" in not_object.message
    assert missing.code == INVALID_PARAMS and "server" in missing.message
    assert unknown.code == INVALID_PARAMS and "nope" in unknown.message
    assert bad_uri.code == INVALID_PARAMS
    assert bad_decision.code == INVALID_PARAMS and "decision" in bad_decision.message
