#!/usr/bin/env python3
"""Check lifecycle benchmark folders (the format of FORMAT.md: manifest.json + timeline.jsonl).

Usage: validate.py FOLDER [FOLDER ...]

Each folder is checked on its own:
  - every line is a JSON object with the fields its op needs, of the right types and values;
  - write refs and query refs are unique; `at` is RFC 3339 UTC and never goes backwards;
  - namespaces are lowercase ASCII letters, digits, '-' and '/';
  - every gold_all / gold_any / forbidden / max_from_group ref is a write earlier in the same file,
    in a bank the query may read (its namespace or one of `namespaces`); gold and forbidden are disjoint;
  - queries that depend on a review (knowledge_update, inference_vs_fact, source_conflict, dedup,
    poisoning) have a review of each involved bank after the last involved write and before the query;
  - ttl_live: each gold write with a ttl is still alive at the query; ttl_expired: each forbidden
    write has a ttl and has expired by the query;
  - manifest.json counts (writes, reviews, queries, categories) match the timeline.
When several folders are given, their refs must also be disjoint. Exits 1 on any error.
"""
import json
import re
import sys
from collections import Counter
from datetime import datetime, timedelta

NS_RE = re.compile(r"^[a-z0-9][a-z0-9/-]*$")
CATEGORIES = ["single_hop", "knowledge_update", "inference_vs_fact", "source_conflict", "multi_hop",
              "lesson", "dedup", "poisoning", "guard_benign", "shared_namespace", "ttl_live",
              "ttl_expired", "temporal"]
NEEDS_REVIEW = {"knowledge_update", "inference_vs_fact", "source_conflict", "dedup", "poisoning"}
KINDS = {"working", "episodic", "semantic"}
SOURCES = {"user", "tool", "agent"}
LANGS = {"en", "zh"}


def parse_time(s):
    if not isinstance(s, str) or not re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$", s):
        raise ValueError(f"not an RFC 3339 UTC time: {s!r}")
    return datetime.fromisoformat(s[:-1] + "+00:00")


def check_folder(folder):
    errors, warnings = [], []
    err, warn = errors.append, warnings.append
    try:
        manifest = json.load(open(f"{folder}/manifest.json", encoding="utf-8"))
    except Exception as e:  # noqa: BLE001
        return [f"manifest.json: {e}"], [], set()
    ops = []
    try:
        lines = open(f"{folder}/timeline.jsonl", encoding="utf-8").read().splitlines()
    except Exception as e:  # noqa: BLE001
        return [f"timeline.jsonl: {e}"], [], set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            err(f"line {n}: empty line")
            continue
        try:
            o = json.loads(line)
        except json.JSONDecodeError as e:
            err(f"line {n}: bad JSON: {e}")
            continue
        if not isinstance(o, dict):
            err(f"line {n}: not an object")
            continue
        ops.append((n, o))

    writes = {}          # ref -> (line, obj, time)
    qrefs = set()
    reviews = []         # (time, namespace)
    counts = Counter()
    cats = Counter()
    last_t = None
    for n, o in ops:
        op = o.get("op")
        try:
            t = parse_time(o.get("at"))
        except ValueError as e:
            err(f"line {n}: {e}")
            continue
        if last_t is not None and t < last_t:
            err(f"line {n}: time goes backwards ({o.get('at')})")
        last_t = t
        ns = o.get("namespace")
        if not isinstance(ns, str) or not NS_RE.match(ns):
            err(f"line {n}: bad namespace {ns!r}")
        if op == "write":
            counts["writes"] += 1
            ref = o.get("ref")
            if not isinstance(ref, str) or not ref:
                err(f"line {n}: write without ref")
                continue
            if ref in writes or ref in qrefs:
                err(f"line {n}: duplicate ref {ref}")
            if not isinstance(o.get("content"), str) or not o["content"].strip():
                err(f"line {n}: {ref}: empty content")
            if o.get("lang") not in LANGS:
                err(f"line {n}: {ref}: bad lang {o.get('lang')!r}")
            if o.get("kind") not in KINDS:
                err(f"line {n}: {ref}: bad kind {o.get('kind')!r}")
            if o.get("source") not in SOURCES:
                err(f"line {n}: {ref}: bad source {o.get('source')!r}")
            if (o.get("source") == "tool") != ("tool" in o):
                err(f"line {n}: {ref}: `tool` must be given exactly when source is tool")
            if "tool" in o and (not isinstance(o["tool"], str) or not o["tool"]):
                err(f"line {n}: {ref}: bad tool name")
            if "ttl_seconds" in o and (not isinstance(o["ttl_seconds"], int) or o["ttl_seconds"] <= 0):
                err(f"line {n}: {ref}: bad ttl_seconds")
            if "attack" in o and o["attack"] is not True:
                err(f"line {n}: {ref}: attack must be true when present")
            writes[ref] = (n, o, t)
        elif op == "review":
            counts["reviews"] += 1
            reviews.append((t, ns))
        elif op == "query":
            counts["queries"] += 1
            ref = o.get("ref")
            if not isinstance(ref, str) or not ref:
                err(f"line {n}: query without ref")
                continue
            if ref in qrefs or ref in writes:
                err(f"line {n}: duplicate ref {ref}")
            qrefs.add(ref)
            cat = o.get("category")
            if cat not in CATEGORIES:
                err(f"line {n}: {ref}: bad category {cat!r}")
            cats[cat] += 1
            if not isinstance(o.get("query"), str) or not o["query"].strip():
                err(f"line {n}: {ref}: empty query text")
            if o.get("lang") not in LANGS:
                err(f"line {n}: {ref}: bad lang {o.get('lang')!r}")
            k = o.get("k")
            if not isinstance(k, int) or k < 1:
                err(f"line {n}: {ref}: bad k {k!r}")
            if cat == "temporal" and k != 1:
                warn(f"line {n}: {ref}: temporal query with k={k} (FORMAT.md uses k = 1)")
            readable = {ns}
            if "namespaces" in o:
                nss = o["namespaces"]
                if not isinstance(nss, list) or not all(isinstance(x, str) and NS_RE.match(x) for x in nss):
                    err(f"line {n}: {ref}: bad namespaces {nss!r}")
                else:
                    if ns not in nss:
                        err(f"line {n}: {ref}: namespaces does not include its own namespace")
                    readable |= set(nss)
            fields = {}
            for key in ("gold_all", "gold_any", "forbidden"):
                if key in o:
                    if not isinstance(o[key], list) or not all(isinstance(x, str) for x in o[key]):
                        err(f"line {n}: {ref}: {key} must be a list of refs")
                        continue
                    fields[key] = o[key]
            mfg = o.get("max_from_group")
            if mfg is not None:
                if (not isinstance(mfg, dict) or not isinstance(mfg.get("refs"), list)
                        or not isinstance(mfg.get("max"), int) or mfg["max"] < 1):
                    err(f"line {n}: {ref}: bad max_from_group")
                else:
                    fields["max_from_group"] = mfg["refs"]
            if not fields.get("gold_all") and not fields.get("gold_any") and not fields.get("forbidden"):
                err(f"line {n}: {ref}: no gold_all, gold_any or forbidden")
            involved = set()
            for key, refs in fields.items():
                for r in refs:
                    if r not in writes:
                        err(f"line {n}: {ref}: {key} ref {r} is not an earlier write")
                        continue
                    involved.add(r)
                    wns = writes[r][1]["namespace"]
                    if wns not in readable:
                        err(f"line {n}: {ref}: {key} ref {r} is in bank {wns}, which the query cannot read")
                if len(set(refs)) != len(refs):
                    err(f"line {n}: {ref}: repeated ref in {key}")
            gold = set(fields.get("gold_all", [])) | set(fields.get("gold_any", []))
            if gold & set(fields.get("forbidden", [])):
                err(f"line {n}: {ref}: a ref is both gold and forbidden")
            if cat == "dedup" and "max_from_group" not in fields:
                warn(f"line {n}: {ref}: dedup query without max_from_group")
            if cat == "poisoning":
                forb = fields.get("forbidden", [])
                if not forb:
                    err(f"line {n}: {ref}: poisoning query without forbidden")
                for r in forb:
                    if r in writes and not writes[r][1].get("attack"):
                        warn(f"line {n}: {ref}: forbidden {r} is not marked attack")
            if cat in ("ttl_live", "ttl_expired"):
                key = "gold_all" if cat == "ttl_live" else "forbidden"
                refs = [r for r in fields.get(key, []) if r in writes]
                if not refs:
                    err(f"line {n}: {ref}: {cat} query without {key}")
                for r in refs:
                    w = writes[r][1]
                    ttl = w.get("ttl_seconds")
                    if ttl is None:
                        err(f"line {n}: {ref}: {cat} ref {r} has no ttl_seconds")
                        continue
                    end = writes[r][2] + timedelta(seconds=ttl)
                    if cat == "ttl_live" and not t < end:
                        err(f"line {n}: {ref}: {r} has already expired at the query")
                    if cat == "ttl_expired" and not t >= end:
                        err(f"line {n}: {ref}: {r} is still alive at the query")
            for r in gold:
                if r in writes and "ttl_seconds" in writes[r][1]:
                    end = writes[r][2] + timedelta(seconds=writes[r][1]["ttl_seconds"])
                    if t >= end:
                        err(f"line {n}: {ref}: gold {r} has expired at the query")
            if cat in NEEDS_REVIEW and involved:
                by_ns = {}
                for r in involved:
                    w_ns, w_t = writes[r][1]["namespace"], writes[r][2]
                    by_ns[w_ns] = max(by_ns.get(w_ns, w_t), w_t)
                for b, latest in by_ns.items():
                    if not any(b == rns and latest <= rt <= t for rt, rns in reviews):
                        err(f"line {n}: {ref}: no review of {b} between its last involved write and the query")
        else:
            err(f"line {n}: unknown op {op!r}")

    # manifest
    for key in ("writes", "reviews", "queries"):
        if manifest.get(key) != counts[key]:
            err(f"manifest: {key} = {manifest.get(key)!r}, timeline has {counts[key]}")
    mc = manifest.get("categories", {})
    if not isinstance(mc, dict):
        err("manifest: categories is not an object")
    else:
        for c in set(mc) | set(cats):
            if mc.get(c, 0) != cats.get(c, 0):
                err(f"manifest: categories[{c}] = {mc.get(c, 0)}, timeline has {cats.get(c, 0)}")
    if "format" in manifest and manifest["format"] != 1:
        warn(f"manifest: format {manifest['format']!r}")
    missing = [c for c in CATEGORIES if not cats.get(c)]
    if missing:
        warn(f"categories without queries: {', '.join(missing)}")
    return errors, warnings, set(writes) | qrefs


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip())
        return 2
    bad = False
    seen = {}
    for folder in argv[1:]:
        folder = folder.rstrip("/")
        errors, warnings, refs = check_folder(folder)
        for r in refs:
            if r in seen:
                errors.append(f"ref {r} also used in {seen[r]}")
            else:
                seen[r] = folder
        try:
            m = json.load(open(f"{folder}/manifest.json", encoding="utf-8"))
            summary = f"{m.get('writes')} writes, {m.get('reviews')} reviews, {m.get('queries')} queries"
        except Exception:  # noqa: BLE001
            summary = "no manifest"
        status = "FAIL" if errors else "ok"
        print(f"{folder}: {status} ({summary}; {len(errors)} errors, {len(warnings)} warnings)")
        for e in errors[:50]:
            print(f"  error: {e}")
        if len(errors) > 50:
            print(f"  ... {len(errors) - 50} more errors")
        for w in warnings[:20]:
            print(f"  warning: {w}")
        bad |= bool(errors)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
