#!/usr/bin/env python3
"""A transparent recording proxy for an OpenAI-compatible chat server.

Every request is forwarded unchanged to the upstream server and its answer is returned
unchanged. For each POST (chat completion) one JSON line is appended to the log: when it was
sent, how long the exchange took, the request (model, max_tokens, response_format, the
messages) and the answer (HTTP status, content, finish_reason, usage). `analyse.py` reads that
log to count requests, re-asks, malformed answers and generation speed per review cycle.

With --guide, a request that asks for `response_format: {"type": "json_object"}` and lists
judge pairs (one JSON object per line with "id", "a" and "b") is sent on with a JSON schema
added to its response_format, in the form llama-cpp-python's server accepts
(`{"type": "json_object", "schema": {...}}`): the server then constrains decoding to one verdict
per asked id, in order, with a relation from the allowed list. The schema cannot express "a side
is required for update and inference_refuted", so the judge's own checks still have work to
do. The log records whether a schema was added.

Usage: proxy.py --port PORT --upstream http://127.0.0.1:8000 --log FILE [--guide]
Standard library only; listens on 127.0.0.1.
"""

import argparse
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()

RELATIONS = [
    "duplicate",
    "update",
    "inference_refuted",
    "source_conflict",
    "undecidable",
    "unrelated",
]


def listed_pairs(messages):
    """The pair lines listed in the user message, in order, as dicts."""
    user = next((m.get("content", "") for m in messages or [] if m.get("role") == "user"), "")
    pairs = []
    for line in user.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            item = json.loads(line)
        except Exception:
            continue
        if isinstance(item, dict) and isinstance(item.get("id"), str) and "a" in item and "b" in item:
            pairs.append(item)
    return pairs


def pair_ids(messages):
    """The ids of the pairs listed in the user message, in order."""
    return [item["id"] for item in listed_pairs(messages)]


def verdict_schema(ids):
    def verdict(pid):
        return {
            "type": "object",
            "properties": {
                "id": {"const": pid},
                "relation": {"enum": RELATIONS},
                "newer_or_fact": {"enum": ["a", "b", None]},
                "reason": {"type": "string", "maxLength": 120},
            },
            "required": ["id", "relation", "newer_or_fact", "reason"],
        }

    return {
        "type": "object",
        "properties": {"verdicts": {"type": "array", "prefixItems": [verdict(i) for i in ids]}},
        "required": ["verdicts"],
    }


def guided(body):
    """The request with a verdict schema added, or None when it is not a judge request."""
    try:
        req = json.loads(body)
    except Exception:
        return None
    fmt = req.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_object" or "schema" in fmt:
        return None
    ids = pair_ids(req.get("messages"))
    if not ids:
        return None
    req["response_format"] = {"type": "json_object", "schema": verdict_schema(ids)}
    return json.dumps(req).encode()


def make_handler(upstream, log_path, guide):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # keep stderr quiet
            pass

        def _forward(self, method, body):
            headers = {
                k: v
                for k, v in self.headers.items()
                if k.lower() not in ("host", "content-length", "connection", "accept-encoding")
            }
            request = urllib.request.Request(
                upstream + self.path, data=body, method=method, headers=headers
            )
            try:
                with urllib.request.urlopen(request, timeout=600) as response:
                    return response.status, dict(response.headers.items()), response.read()
            except urllib.error.HTTPError as e:
                return e.code, dict(e.headers.items()), e.read()
            except Exception as e:  # upstream down: answer like a gateway would
                return 502, {"Content-Type": "application/json"}, json.dumps(
                    {"error": {"message": f"proxy: upstream failed: {e}"}}
                ).encode()

        def _reply(self, status, headers, payload):
            self.send_response(status)
            for k, v in headers.items():
                if k.lower() in ("content-type", "retry-after"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self):
            status, headers, payload = self._forward("GET", None)
            self._reply(status, headers, payload)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            schema_added = False
            if guide:
                changed = guided(body)
                if changed is not None:
                    body, schema_added = changed, True
            started = time.time()
            status, headers, payload = self._forward("POST", body)
            elapsed = time.time() - started
            record = {
                "started": started,
                "elapsed_s": round(elapsed, 4),
                "path": self.path,
                "status": status,
                "schema_added": schema_added,
            }
            try:
                req = json.loads(body)
                record["request"] = {
                    "model": req.get("model"),
                    "max_tokens": req.get("max_tokens"),
                    "temperature": req.get("temperature"),
                    "response_format": (req.get("response_format") or {}).get("type"),
                    "messages": req.get("messages"),
                }
            except Exception:
                record["request"] = {"raw": body[:2000].decode("utf-8", "replace")}
            try:
                ans = json.loads(payload)
                choice = (ans.get("choices") or [{}])[0]
                record["answer"] = {
                    "content": (choice.get("message") or {}).get("content"),
                    "finish_reason": choice.get("finish_reason"),
                    "usage": ans.get("usage"),
                }
            except Exception:
                record["answer"] = {"raw": payload[:2000].decode("utf-8", "replace")}
            with LOCK:
                with open(log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._reply(status, headers, payload)

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--guide", action="store_true", help="add a verdict JSON schema")
    args = parser.parse_args()
    server = ThreadingHTTPServer(
        ("127.0.0.1", args.port), make_handler(args.upstream.rstrip("/"), args.log, args.guide)
    )
    mode = "adding verdict schemas" if args.guide else "transparent"
    print(f"proxy on 127.0.0.1:{args.port} -> {args.upstream} ({mode})", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
