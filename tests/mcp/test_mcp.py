"""The memory tools through the MCP Python SDK, over stdio (`hindsight mcp`) and streamable HTTP
(`/mcp` on the node's HTTP port), against a running node.

Usage: test_mcp.py BINARY GRPC_ADDR HTTP_ADDR
"""

import asyncio
import datetime
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
    "memory_feedback",
    "memory_get",
    "memory_list_banks",
}

# docs/RECALL-RESULT.md, "What each interface may leave out": memory_search's result, exactly.
SEARCH_KEYS = {"hits", "time_window", "recall_id"}
HIT_KEYS = {"memory", "status", "score", "explain"}
MEMORY_KEYS = {
    "id",
    "bank",
    "kind",
    "subtype",
    "content",
    "confidence",
    "critical",
    "tags",
    "occurred_at",
    "valid_to",
    "provenance",
}


def assert_search_shape(found):
    """The documented subset of the recall result: no key more, none less, nothing flattened."""
    assert set(found) in (SEARCH_KEYS, SEARCH_KEYS | {"note"}), sorted(found)
    assert isinstance(found["hits"], list) and isinstance(found["recall_id"], str), found
    for hit in found["hits"]:
        assert set(hit) == HIT_KEYS, sorted(hit)
        assert set(hit["memory"]) == MEMORY_KEYS, sorted(hit["memory"])
        assert set(hit["memory"]["provenance"]) == {"source"}, hit["memory"]["provenance"]
        assert set(hit["status"]) == {"name"}, hit["status"]
        assert set(hit["explain"]) == {"flags"}, hit["explain"]
        assert isinstance(hit["explain"]["flags"], list) and isinstance(hit["memory"]["tags"], list)


def hit_ids(found):
    return [h["memory"]["id"] for h in found["hits"]]


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

    # A moment before the write, for searching the bank as it was then.
    before_write = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=2)).isoformat()
    content = f"The user wants weekly reports on Fridays ({marker})"
    written = await ok(
        client,
        "memory_write",
        {**bank_args, "content": content, "source": "user", "subtype": "preference"},
    )
    assert written["disposition"] == "created", written
    memory_id = written["id"]

    query = f"when does the user want reports {marker}"
    found = await ok(client, "memory_search", {**bank_args, "query": query, "intent": "preferences"})
    assert_search_shape(found)
    hit = next(h for h in found["hits"] if h["memory"]["id"] == memory_id)
    assert hit["memory"]["content"] == content and hit["memory"]["subtype"] == "preference", hit
    assert hit["memory"]["provenance"]["source"] == "user" and hit["status"]["name"] == "active", hit
    assert found["recall_id"], "the node keeps a retrieval log by default"

    # Feedback on what that search returned moves the memory's confidence.
    fed = await ok(
        client,
        "memory_feedback",
        {"recall_id": found["recall_id"], "memory_id": memory_id, "outcome": "helpful"},
    )
    assert fed["applied"] is True, fed
    assert fed["confidence_after"] > fed["confidence_before"], fed
    assert fed["confidence_before"] == hit["memory"]["confidence"], (fed, hit)
    message = await refused(
        client, "memory_feedback", {"recall_id": found["recall_id"], "memory_id": memory_id, "outcome": "great"}
    )
    assert message, "an unknown outcome is a tool error"

    got = await ok(client, "memory_get", {"id": memory_id})
    assert got["id"] == memory_id and got["content"] == content, got
    assert got["confidence"] == fed["confidence_after"], (got, fed)
    message = await refused(client, "memory_get", {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"})
    assert message.startswith("not found"), message

    banks = await ok(client, "memory_list_banks", {})
    bank = bank_args.get("bank") or banks.get("default_bank")
    listed = {b["name"]: b for b in banks["banks"]}
    assert bank in listed and listed[bank]["memory_count"] >= 1, banks

    # As the bank was before the write, the write is not there yet.
    then = await ok(client, "memory_search", {**bank_args, "query": query, "as_of": before_write})
    assert_search_shape(then)
    assert memory_id not in hit_ids(then), then
    message = await refused(client, "memory_search", {**bank_args, "query": query, "as_of": "last Friday"})
    assert message.startswith("invalid argument") and "as_of" in message, message

    traced = await ok(client, "memory_trace", {"id": memory_id})
    assert traced["memory"]["id"] == memory_id

    # Bad calls are tool errors; the connection stays usable.
    message = await refused(client, "memory_write", {**bank_args, "content": ""})
    assert message.startswith("invalid argument"), message
    message = await refused(client, "memory_trace", {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"})
    assert message.startswith("not found"), message
    await refused(client, "memory_resolve_conflict", {**bank_args, "conflict_id": 1, "outcome": "keep_neither"})

    again = await ok(client, "memory_search", {**bank_args, "query": f"weekly reports {marker}"})
    assert_search_shape(again)
    assert memory_id in hit_ids(again), again


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
