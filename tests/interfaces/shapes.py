"""The same recall through every interface, compared field by field with the HTTP answer.

The HTTP answer is the documented shape (docs/RECALL-RESULT.md). Each other interface's answer is
reduced to its set of key paths (`hits[].memory.status.name` …) over the fields that carry a value:
the CLI, the Python client and the TypeScript client must give exactly the HTTP answer's paths,
gRPC's protobuf JSON the same (it leaves unset optional fields out, as the HTTP answer's nulls
are left out here), and MCP a subset that holds the fields the document promises it. The ranked
ids must agree everywhere too: the interfaces differ in form only.
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
import real_node  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BANK = "shapes/agent"
QUERY = "how does the user want reports delivered?"
TOP_K = 5
# Maps whose keys are the user's data, not field names.
OPEN_MAPS = {"metadata", "context"}
MCP_PROMISED = {
    "hits", "recall_id",
    "hits[].memory", "hits[].memory.id", "hits[].memory.bank", "hits[].memory.kind",
    "hits[].memory.content", "hits[].memory.confidence", "hits[].memory.critical",
    "hits[].memory.tags", "hits[].memory.occurred_at", "hits[].memory.provenance",
    "hits[].memory.provenance.source", "hits[].status", "hits[].status.name", "hits[].score",
    "hits[].explain", "hits[].explain.flags",
}


def paths(value, prefix=""):
    """Every key path of a JSON value whose value is not null."""
    found = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if inner is None:
                continue
            path = f"{prefix}.{key}" if prefix else key
            found.add(path)
            if key not in OPEN_MAPS:
                found |= paths(inner, path)
    elif isinstance(value, list):
        for inner in value:
            found |= paths(inner, f"{prefix}[]")
    return found


def ranked_ids(answer):
    return [h["memory"]["id"] for h in answer.get("hits", [])]


def http_json(url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def seed(http):
    base = f"http://{http}/v1/banks/{BANK.replace('/', '%2F')}/memories"
    for body in [
        {"content": "Send the user's weekly report as a PDF attachment", "provenance": {"source": "user"},
         "tags": ["reports"], "metadata": {"channel": "email"}, "occurred_at": "2026-11-20T09:00:00Z"},
        {"content": "The user reads reports on a phone, so keep tables narrow", "provenance": {"source": "agent", "agent_id": "writer-1"}},
        {"content": "Reports go out every Friday before noon", "provenance": {"source": "tool", "tool": "calendar"}},
    ]:
        http_json(base, body)
    # A duplicate, so that a hit carries merged support.
    http_json(base, {"content": "Reports go out every Friday before noon", "provenance": {"source": "tool", "tool": "calendar"}})
    http_json(f"http://{http}/v1/banks/{BANK.replace('/', '%2F')}/review", {})


def over_grpc(grpc, workdir):
    from grpc_tools import protoc
    import grpc as grpclib
    from google.protobuf import json_format

    out = workdir / "stubs"
    out.mkdir()
    protos = sorted(str(p.relative_to(ROOT / "proto")) for p in (ROOT / "proto").rglob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    status = protoc.main(["protoc", f"-I{ROOT / 'proto'}", f"-I{include}", f"--python_out={out}",
                          f"--grpc_python_out={out}", *protos])
    if status != 0:
        raise SystemExit(f"protoc failed on {protos}")
    sys.path.insert(0, str(out))
    from hindsight.v1 import memory_service_pb2, memory_service_pb2_grpc

    with grpclib.insecure_channel(grpc) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        answer = stub.Recall(memory_service_pb2.RecallRequest(banks=[BANK], query=QUERY, top_k=TOP_K), timeout=30)
    options = {"preserving_proto_field_name": True}
    try:
        return json_format.MessageToDict(answer, always_print_fields_with_no_presence=True, **options)
    except TypeError:  # protobuf before 5.26 names the option differently
        return json_format.MessageToDict(answer, including_default_value_fields=True, **options)


def over_cli(binary, grpc):
    printed = subprocess.run(
        [binary, "recall", "--bank", BANK, "--query", QUERY, "--top-k", str(TOP_K), "--output", "json",
         "--server", grpc],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout
    return json.loads(printed)


def over_python(http):
    from hindsight_client import HindsightClient

    with HindsightClient(f"http://{http}", api_key="") as client:
        return client.recall(BANK, QUERY, top_k=TOP_K).to_dict()


def over_mcp(http):
    from mcp import Client

    async def search():
        async with Client(f"http://{http}/mcp") as client:
            result = await client.call_tool("memory_search", {"query": QUERY, "bank": BANK, "top_k": TOP_K})
            if result.is_error:
                raise SystemExit(f"memory_search failed: {result.content}")
            if result.structured_content is not None:
                return result.structured_content
            return json.loads("\n".join(c.text for c in result.content if getattr(c, "type", None) == "text"))

    return asyncio.run(search())


def over_typescript(http):
    dist = ROOT / "clients" / "typescript" / "dist" / "index.js"
    if not dist.exists():
        raise SystemExit(f"{dist} is missing: build the TypeScript client first (tests/typescript/run)")
    script = (
        f"import {{ HindsightClient }} from {json.dumps(dist.as_uri())};"
        f"const client = new HindsightClient({{ baseUrl: {json.dumps('http://' + http)} }});"
        f"const answer = await client.recall({json.dumps(BANK)}, {{ query: {json.dumps(QUERY)}, top_k: {TOP_K} }});"
        "process.stdout.write(JSON.stringify(answer));"
    )
    printed = subprocess.run(["node", "--input-type=module", "-e", script], check=True,
                             capture_output=True, text=True, timeout=60).stdout
    return json.loads(printed)


def main():
    binary = os.environ["HINDSIGHT_BIN"]
    only = set(sys.argv[1:])
    failures = []
    with tempfile.TemporaryDirectory(prefix="hindsight-shapes-") as tmp:
        workdir = Path(tmp)
        node, grpc, http = real_node.start(binary, workdir)
        try:
            seed(http)
            reference = http_json(f"http://{http}/v1/banks/{BANK.replace('/', '%2F')}/recall",
                                  {"query": QUERY, "top_k": TOP_K})
            expected = paths(reference)
            if len(reference["hits"]) < 2:
                raise SystemExit(f"the seeded bank recalled too little to compare: {reference}")
            print(f"ok    HTTP: {len(reference['hits'])} hits, {len(expected)} field paths")
            interfaces = [
                ("gRPC", lambda: over_grpc(grpc, workdir), "equal"),
                ("CLI", lambda: over_cli(binary, grpc), "equal"),
                ("Python", lambda: over_python(http), "equal"),
                ("TypeScript", lambda: over_typescript(http), "equal"),
                ("MCP", lambda: over_mcp(http), "subset"),
            ]
            for name, ask, rule in interfaces:
                if only and name not in only:
                    continue
                try:
                    answer = ask()
                except SystemExit:
                    raise
                except Exception as e:  # the interface itself failed: report it as such
                    failures.append(name)
                    print(f"FAIL  {name}: {type(e).__name__}: {e}")
                    continue
                got = paths(answer)
                problems = []
                if rule == "equal":
                    if got - expected:
                        problems.append(f"fields the documented shape does not have: {sorted(got - expected)}")
                    if expected - got:
                        problems.append(f"documented fields missing: {sorted(expected - got)}")
                else:
                    extra = got - expected - {"note"}
                    if extra:
                        problems.append(f"fields the documented shape does not have: {sorted(extra)}")
                    missing = {p for p in MCP_PROMISED if p in expected} - got
                    if missing:
                        problems.append(f"promised fields missing: {sorted(missing)}")
                if ranked_ids(answer) != ranked_ids(reference):
                    problems.append(f"ranked ids {ranked_ids(answer)} differ from HTTP's {ranked_ids(reference)}")
                if problems:
                    failures.append(name)
                    print(f"FAIL  {name}:\n      " + "\n      ".join(problems))
                else:
                    print(f"ok    {name}: the same {len(got)} field paths{'' if rule == 'equal' else ' (a subset)'} and ranking")
        finally:
            real_node.stop(node)
    if failures:
        print(f"{len(failures)} interface(s) differ from docs/RECALL-RESULT.md: {', '.join(failures)}")
        return 1
    print("every interface answers a recall in the documented shape")
    return 0


if __name__ == "__main__":
    sys.exit(main())
