"""The memory tools through the MCP Python SDK, over stdio (`hindsight mcp`) and streamable HTTP
(`/mcp` on the node's HTTP port), against a running node.

Usage: test_mcp.py BINARY GRPC_ADDR HTTP_ADDR
"""

import asyncio
import json
import sys
import tempfile
import traceback

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TOOLS = {
    "memory_write",
    "memory_search",
    "memory_review",
    "memory_resolve_conflict",
    "memory_trace",
    "memory_forget",
    "memory_reflect",
}


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def ok(client, tool, arguments):
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {text_of(result)}"
    value = json.loads(text_of(result))
    if result.structured_content is not None:
        assert result.structured_content == value, "text and structured content disagree"
    return value


async def refused(client, tool, arguments):
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed: {text_of(result)}"
    return text_of(result)


async def exercise(client, bank_args, marker):
    """The same scenario over any transport; `bank_args` is {} when the transport names the bank."""
    listed = await client.list_tools()
    names = {t.name for t in listed.tools}
    assert names == TOOLS, f"tools: {sorted(names)}"
    for tool in listed.tools:
        assert tool.description and "Call" in tool.description, f"{tool.name} says when to call it"
        assert tool.input_schema.get("type") == "object"

    content = f"The user wants weekly reports on Fridays ({marker})"
    written = await ok(
        client,
        "memory_write",
        {**bank_args, "content": content, "source": "user", "subtype": "preference"},
    )
    assert written["disposition"] == "created", written
    memory_id = written["id"]

    found = await ok(client, "memory_search", {**bank_args, "query": f"when does the user want reports {marker}"})
    assert any(m["id"] == memory_id and m["content"] == content for m in found["memories"]), found

    traced = await ok(client, "memory_trace", {"id": memory_id})
    assert traced["memory"]["id"] == memory_id

    # Bad calls are tool errors; the connection stays usable.
    message = await refused(client, "memory_write", {**bank_args, "content": ""})
    assert message.startswith("invalid argument"), message
    message = await refused(client, "memory_trace", {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"})
    assert message.startswith("not found"), message
    await refused(client, "memory_resolve_conflict", {**bank_args, "conflict_id": 1, "outcome": "keep_neither"})

    again = await ok(client, "memory_search", {**bank_args, "query": f"weekly reports {marker}"})
    assert again["count"] >= 1, again


async def over_stdio(binary, grpc, log):
    params = StdioServerParameters(command=binary, args=["mcp", "--server", grpc, "--bank", "demo"])
    async with Client(stdio_client(params, errlog=log)) as client:
        await exercise(client, {}, "stdio")
    log.flush()
    log.seek(0)
    logged = log.read()
    assert "serving MCP over stdio" in logged, f"the server logs to stderr: {logged!r}"


async def over_stdio_without_a_node(binary, log):
    # A host may start the server before the node: calls fail as tool errors until it is up.
    params = StdioServerParameters(command=binary, args=["mcp", "--server", "127.0.0.1:9", "--bank", "demo"])
    async with Client(stdio_client(params, errlog=log)) as client:
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        message = await refused(client, "memory_search", {"query": "anything"})
        assert "cannot reach" in message, message


async def over_http(http, mode):
    headers = {"x-hindsight-bank": "demo-http"}
    async with create_mcp_http_client(headers=headers) as http_client:
        transport = streamable_http_client(f"http://{http}/mcp", http_client=http_client)
        async with Client(transport, mode=mode) as client:
            await exercise(client, {}, f"http-{mode}")


async def over_http_with_bank_arguments(http):
    async with Client(f"http://{http}/mcp") as client:
        message = await refused(client, "memory_write", {"content": "no bank anywhere"})
        assert "bank" in message, message
        await exercise(client, {"bank": "demo-args"}, "http-args")


async def main(binary, grpc, http):
    passed = failed = 0
    with tempfile.TemporaryFile("w+") as log:
        cases = [
            ("stdio", lambda: over_stdio(binary, grpc, log)),
            ("stdio without a node", lambda: over_stdio_without_a_node(binary, log)),
            ("http (negotiated protocol)", lambda: over_http(http, "auto")),
            ("http (initialize handshake)", lambda: over_http(http, "legacy")),
            ("http (bank in arguments)", lambda: over_http_with_bank_arguments(http)),
        ]
        for name, case in cases:
            try:
                await asyncio.wait_for(case(), timeout=60)
                print(f"ok: {name}")
                passed += 1
            except BaseException:  # noqa: BLE001 - every failure is reported, then the next case runs
                print(f"FAILED: {name}")
                traceback.print_exc()
                failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(asyncio.run(main(*sys.argv[1:])))
