"""Fixture MCP server with tools, prompts, resources, completion and logging, for the agent gateway's tests.

Tools: ``echo {text}`` answers the text; ``slow {steps}`` reports ``steps`` progress notifications, records
``{"slow": requestId}`` and then waits until it is cancelled; ``sample {prompt}`` asks the client for sampling
(``sampling/createMessage``) and answers with the text it got, or with the refusal as an error result; ``log {level,
text}`` sends a log message; ``touch {uri}`` sends ``resources/updated`` for a subscribed URI and
``resources/list_changed`` (to ``subscriptions/listen`` streams too, in the 2026-07-28 era); ``roots`` answers the
roots the client gave last.
Resources ``tools://res/{i}`` (``--count``, one page), a template ``tools://item/{name}`` with completion, one prompt
``greet {name}``.

Every ``roots/list`` answer (fetched after ``initialized`` and on ``roots/list_changed``) is recorded, as are
subscriptions, ``logging/setLevel`` and every ``notifications/cancelled``. With ``--unprompted``, every
``roots/list_changed`` is also followed by what no call asked for (:meth:`ToolsFixture.act_unprompted`). Serves both
eras; ``--pin VERSION`` makes it handshake-only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
from fixture_support import RecordFile, configure_logging, serve_stdio
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourcesListChanged, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

logger = configure_logging("tools_server")

TOOLS = [
    types.Tool(
        name="echo",
        description="Answer the text",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    ),
    types.Tool(
        name="slow",
        description="Report progress, then wait to be cancelled",
        input_schema={"type": "object", "properties": {"steps": {"type": "integer"}}},
    ),
    types.Tool(
        name="sample",
        description="Ask the client to sample",
        input_schema={"type": "object", "properties": {"prompt": {"type": "string"}}},
    ),
    types.Tool(
        name="log",
        description="Send a log message",
        input_schema={"type": "object", "properties": {"level": {"type": "string"}, "text": {"type": "string"}}},
    ),
    types.Tool(
        name="touch",
        description="Send resources/updated and list_changed",
        input_schema={"type": "object", "properties": {"uri": {"type": "string"}}},
    ),
    types.Tool(
        name="roots", description="The roots the client gave last", input_schema={"type": "object", "properties": {}}
    ),
]


class ToolsFixture:
    """The server's state: options, the record file, the last roots, the subscriptions."""

    def __init__(self, count: int, record: Path | None, unprompted: bool = False) -> None:
        self.count = count
        self.unprompted = unprompted
        self.record = RecordFile(record)
        self.roots: list[dict[str, Any]] | None = None
        self.subscribed: set[str] = set()
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)

    async def fetch_roots(self, ctx: ServerRequestContext[Any], trigger: str) -> None:
        """Ask the client for its roots and record the answer."""
        try:
            result = await ctx.session.send_request(types.ListRootsRequest(), types.ListRootsResult)
        except MCPError as error:
            self.record.write({"rootsError": error.code, "trigger": trigger})
            return
        self.roots = [root.model_dump(mode="json", by_alias=True, exclude_none=True) for root in result.roots]
        self.record.write({"roots": self.roots, "trigger": trigger})
        logger.info("roots: %d", len(self.roots))

    async def on_initialized(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        await self.fetch_roots(ctx, "initialized")

    async def on_roots_changed(self, ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        await self.fetch_roots(ctx, "list_changed")
        if self.unprompted:
            await self.act_unprompted(ctx)

    async def act_unprompted(self, ctx: ServerRequestContext[Any]) -> None:
        """With no call of the client under way: progress for a token nobody gave, ``resources/updated`` for a URI
        nobody subscribed to, then a sampling request, whose answer or refusal is recorded."""
        await ctx.session.send_progress_notification("nobody-asked", 1, None, "unprompted")
        await ctx.session.send_resource_updated("tools://res/2")
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="unprompted"))
        request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=5))
        try:
            answer = await ctx.session.send_request(request, types.CreateMessageResult)
        except MCPError as error:
            self.record.write({"unpromptedSampling": "refused", "message": error.message})
            return
        self.record.write({"unpromptedSampling": "answered", "model": answer.model})

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "echo":
            return text_result(str(arguments.get("text", "")))
        if params.name == "slow":
            for step in range(int(arguments.get("steps", 3))):
                await ctx.session.report_progress(step + 1, None, f"step {step + 1}")
            self.record.write({"slow": ctx.request_id})
            await anyio.sleep_forever()
        if params.name == "sample":
            message = types.SamplingMessage(
                role="user", content=types.TextContent(type="text", text=str(arguments.get("prompt", "")))
            )
            try:
                answer = await ctx.session.send_request(
                    types.CreateMessageRequest(
                        params=types.CreateMessageRequestParams(messages=[message], max_tokens=50)
                    ),
                    types.CreateMessageResult,
                )
            except MCPError as error:
                return types.CallToolResult(content=[types.TextContent(type="text", text=error.message)], is_error=True)
            content = answer.content
            return text_result(content.text if isinstance(content, types.TextContent) else "?")
        if params.name == "log":
            level = cast(types.LoggingLevel, str(arguments.get("level", "info")))
            await ctx.session.send_log_message(level, str(arguments.get("text", "")))
            return text_result("logged")
        if params.name == "touch":
            uri = str(arguments.get("uri", ""))
            if uri in self.subscribed:
                await ctx.session.send_resource_updated(uri)
            await ctx.session.send_resource_list_changed()
            # Listen streams (2026-07-28) get the same events; the SDK drops the direct ones on those connections.
            await self.bus.publish(ResourceUpdated(uri=uri))
            await self.bus.publish(ResourcesListChanged())
            return text_result("touched")
        if params.name == "roots":
            return text_result(json.dumps(self.roots))
        raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.name}")

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=f"tools://res/{i}", name=f"res-{i}", mime_type="text/plain")
                for i in range(self.count)
            ]
        )

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[types.ResourceTemplate(uri_template="tools://item/{name}", name="item")]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if not uri.startswith(("tools://res/", "tools://item/")):
            raise MCPError(code=-32002, message="Resource not found", data={"uri": uri})
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=f"contents of {uri}")]
        )

    async def subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        self.subscribed.add(str(params.uri))
        self.record.write({"subscribe": str(params.uri)})
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.subscribed.discard(str(params.uri))
        self.record.write({"unsubscribe": str(params.uri)})
        return types.EmptyResult()

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[types.Prompt(name="greet", arguments=[types.PromptArgument(name="name", required=True)])]
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        name = (params.arguments or {}).get("name", "you")
        return types.GetPromptResult(
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"Hello, {name}"))]
        )

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        values = [v for v in ("alpha", "alpine", "beta") if v.startswith(params.argument.value)]
        return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))

    async def set_level(self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
        self.record.write({"setLevel": params.level})
        return types.EmptyResult()

    async def middleware(self, ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "notifications/cancelled":
            params = ctx.params or {}
            self.record.write({"cancelled": params.get("requestId"), "reason": params.get("reason")})
        return await call_next(ctx)


def text_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def build_server(fixture: ToolsFixture) -> Server[Any]:
    server: Server[Any] = Server(
        "tools-server",
        version="1.0",
        on_list_tools=fixture.list_tools,
        on_call_tool=fixture.call_tool,
        on_list_resources=fixture.list_resources,
        on_list_resource_templates=fixture.list_templates,
        on_read_resource=fixture.read_resource,
        on_subscribe_resource=fixture.subscribe,
        on_unsubscribe_resource=fixture.unsubscribe,
        on_list_prompts=fixture.list_prompts,
        on_get_prompt=fixture.get_prompt,
        on_completion=fixture.complete,
        on_subscriptions_listen=fixture.listen,
    )
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, fixture.set_level)
    server.add_notification_handler("notifications/initialized", types.NotificationParams, fixture.on_initialized)
    server.add_notification_handler(
        "notifications/roots/list_changed", types.NotificationParams, fixture.on_roots_changed
    )
    server.middleware.append(fixture.middleware)
    return server


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--count", type=int, default=3, help="resources listed (one page)")
    parser.add_argument("--record", type=Path, help="append events here as JSON lines")
    parser.add_argument("--pin", choices=HANDSHAKE_PROTOCOL_VERSIONS, help="handshake only, negotiating this version")
    parser.add_argument(
        "--unprompted", action="store_true", help="on roots/list_changed, also send what no call asked for"
    )
    options = parser.parse_args()
    fixture = ToolsFixture(options.count, options.record, options.unprompted)
    server = build_server(fixture)
    init = server.create_initialization_options()
    init.capabilities.resources = types.ResourcesCapability(subscribe=True, list_changed=True)
    init.capabilities.tools = types.ToolsCapability(list_changed=True)
    await serve_stdio(server, init, pin=options.pin)


if __name__ == "__main__":
    anyio.run(main)
