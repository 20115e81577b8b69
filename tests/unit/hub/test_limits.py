"""Item caps of answers, checked on the parsed JSON before the SDK validates it (docs/security.md H2)."""

from __future__ import annotations

import json

import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from host_bridge.hub.limits import ANSWER_OVER_LIMIT, AnswerLimits
from host_bridge.jsonrpc_lines import parse_line

pytestmark = pytest.mark.requirement("H2")


def request(msg_id: int | str, method: str) -> types.JSONRPCRequest:
    return types.JSONRPCRequest(jsonrpc="2.0", id=msg_id, method=method, params={})


def answer(msg_id: int | str, **result: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}).encode()


def limits() -> AnswerLimits:
    return AnswerLimits("srv", max_page_items=3, max_read_contents=1)


def test_an_answer_over_its_methods_cap_becomes_an_error_for_the_same_request() -> None:
    caps = limits()
    caps.sent(request(1, "resources/list"))
    caps.sent(request("r", "resources/read"))

    page = parse_line(answer(1, resources=[{"uri": f"u{i}", "name": "n"} for i in range(4)]), caps)
    read = parse_line(answer("r", contents=[{"uri": "u", "text": "x"}] * 2), caps)

    for message, msg_id in ((page, 1), (read, "r")):
        assert isinstance(message, SessionMessage) and isinstance(message.message, types.JSONRPCError)
        assert message.message.id == msg_id and message.message.error.code == ANSWER_OVER_LIMIT
    assert isinstance(page, SessionMessage) and isinstance(page.message, types.JSONRPCError)
    assert "held 4 resources in one page, over host_bridge's limit of 3 per page" in page.message.error.message


def test_answers_at_the_cap_and_answers_to_other_requests_pass_untouched() -> None:
    caps = limits()
    caps.sent(request(1, "resources/templates/list"))
    caps.sent(request(2, "tools/list"))

    at_cap = parse_line(answer(1, resourceTemplates=[{"uriTemplate": "t", "name": "n"}] * 3), caps)
    other = parse_line(answer(2, tools=[{"name": "t", "inputSchema": {"type": "object"}}] * 10), caps)
    unasked = parse_line(answer(3, resources=[{"uri": "u", "name": "n"}] * 10), caps)

    for message in (at_cap, other, unasked):
        assert isinstance(message, SessionMessage) and isinstance(message.message, types.JSONRPCResponse)


def test_a_cancelled_request_is_forgotten() -> None:
    caps = limits()
    caps.sent(request(5, "resources/list"))
    caps.sent(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 5}))

    late = parse_line(answer(5, resources=[{"uri": "u", "name": "n"}] * 10), caps)

    assert isinstance(late, SessionMessage) and isinstance(late.message, types.JSONRPCResponse)
