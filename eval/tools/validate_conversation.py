#!/usr/bin/env python3
"""Check conversation benchmark folders (lifecycle format, conversational recall).

Usage: validate_conversation.py FOLDER [FOLDER ...]

Checks every folder on its own (manifest counts, timeline order, field types, gold refs are earlier
writes of the same namespace, questions come after the last turn of their conversation) and, when
several folders are given, that their refs are disjoint. Exits 1 on any error.
"""
import json
import re
import sys
from collections import Counter, defaultdict
from datetime import datetime

NS_RE = re.compile(r"^[a-z0-9][a-z0-9/-]*$")
WREF_RE = re.compile(r"^cv-w\d{5}$")
QREF_RE = re.compile(r"^cv-q\d{4}$")
CATEGORIES = {"conv_single", "conv_multi", "conv_temporal", "conv_update", "conv_detail"}
KINDS = {"working", "episodic", "semantic"}
SOURCES = {"user", "tool", "agent"}
LANGS = {"en", "zh"}


def parse_time(s):
    if not isinstance(s, str) or not s.endswith("Z"):
        raise ValueError(f"not an RFC 3339 UTC time: {s!r}")
    return datetime.fromisoformat(s[:-1] + "+00:00")


def check_folder(folder):
    errors, warnings = [], []
    err = errors.append
    try:
        manifest = json.load(open(f"{folder}/manifest.json", encoding="utf-8"))
    except Exception as e:  # noqa: BLE001
        return [f"manifest.json: {e}"], [], set(), {}
    ops = []
    with open(f"{folder}/timeline.jsonl", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                err(f"line {n}: empty line")
                continue
            try:
                ops.append((n, json.loads(line)))
            except json.JSONDecodeError as e:
                err(f"line {n}: bad JSON: {e}")

    refs = set()
    writes = {}  # ref -> op
    last_write_at = defaultdict(lambda: None)  # namespace -> latest write time
    prev_at = None
    sessions = defaultdict(Counter)  # namespace -> session -> turns
    conv_lang = {}
    q_per_ns = Counter()
    cats = Counter()
    q_lang = Counter()
    for n, o in ops:
        op = o.get("op")
        ref = o.get("ref")
        if ref in refs:
            err(f"line {n}: duplicate ref {ref}")
        refs.add(ref)
        try:
            at = parse_time(o.get("at"))
        except ValueError as e:
            err(f"line {n}: {e}")
            continue
        if prev_at and at < prev_at:
            err(f"line {n}: timeline not sorted by at ({o['at']})")
        prev_at = at
        ns = o.get("namespace")
        if not isinstance(ns, str) or not NS_RE.match(ns) or not ns.startswith("conv/"):
            err(f"line {n}: bad namespace {ns!r}")
        lang = o.get("lang")
        if lang not in LANGS:
            err(f"line {n}: bad lang {lang!r}")
        if ns in conv_lang and conv_lang[ns] != lang:
            err(f"line {n}: namespace {ns} mixes languages")
        conv_lang.setdefault(ns, lang)
        if op == "write":
            if not isinstance(ref, str) or not WREF_RE.match(ref):
                err(f"line {n}: bad write ref {ref!r}")
            content = o.get("content")
            if not isinstance(content, str) or not content.strip():
                err(f"line {n}: empty content")
                content = ""
            if o.get("kind") not in KINDS:
                err(f"line {n}: bad kind {o.get('kind')!r}")
            if o.get("source") not in SOURCES:
                err(f"line {n}: bad source {o.get('source')!r}")
            if o.get("source") == "tool" and not o.get("tool"):
                err(f"line {n}: tool source without tool name")
            speaker = o.get("speaker")
            if speaker is not None:
                if not (content.startswith(speaker + ":") or content.startswith(speaker + "：")):
                    err(f"line {n}: content does not start with '{speaker}:'")
            elif not re.match(r"^[^:：]{1,40}[:：]", content):
                err(f"line {n}: content does not start with a speaker name and colon")
            session = o.get("session")
            if session is not None:
                if not isinstance(session, int) or session < 1:
                    err(f"line {n}: bad session {session!r}")
                else:
                    sessions[ns][session] += 1
            if "attack" in o or "ttl_seconds" in o:
                warnings.append(f"line {n}: unexpected attack/ttl field in a conversation write")
            writes[ref] = o
            last_write_at[ns] = at
        elif op == "query":
            if not isinstance(ref, str) or not QREF_RE.match(ref):
                err(f"line {n}: bad query ref {ref!r}")
            if not isinstance(o.get("query"), str) or not o["query"].strip():
                err(f"line {n}: empty query")
            if o.get("k") != 10:
                err(f"line {n}: k must be 10")
            cat = o.get("category")
            if cat not in CATEGORIES:
                err(f"line {n}: bad category {cat!r}")
            gold = o.get("gold_all")
            if not isinstance(gold, list) or not gold:
                err(f"line {n}: gold_all must be a non-empty list")
                gold = []
            if len(set(gold)) != len(gold):
                err(f"line {n}: repeated gold ref")
            for g in gold:
                w = writes.get(g)
                if w is None:
                    err(f"line {n}: gold {g} is not an earlier write")
                elif w["namespace"] != ns:
                    err(f"line {n}: gold {g} is in another namespace")
            for key in ("gold_any", "forbidden", "max_from_group"):
                if key in o:
                    warnings.append(f"line {n}: {key} present (unused in this benchmark)")
            if last_write_at[ns] is None or at <= last_write_at[ns]:
                err(f"line {n}: query {ref} is not after its conversation's last turn")
            q_per_ns[ns] += 1
            cats[cat] += 1
            q_lang[lang] += 1
        elif op == "review":
            pass
        else:
            err(f"line {n}: unknown op {op!r}")
    # queries must come after the whole conversation, not just the turns before them in the file
    final_write = {}
    for _, o in ops:
        if o.get("op") == "write":
            final_write[o["namespace"]] = parse_time(o["at"])
    for n, o in ops:
        if o.get("op") == "query" and o.get("namespace") in final_write:
            if parse_time(o["at"]) <= final_write[o["namespace"]]:
                err(f"line {n}: query {o['ref']} is placed before its conversation ends")

    # manifest
    nwrites = sum(1 for _, o in ops if o.get("op") == "write")
    nqueries = sum(1 for _, o in ops if o.get("op") == "query")
    nreviews = sum(1 for _, o in ops if o.get("op") == "review")
    want = {"writes": nwrites, "queries": nqueries, "reviews": nreviews,
            "conversations": len(conv_lang), "categories": dict(cats)}
    for key, val in want.items():
        if manifest.get(key) != val:
            err(f"manifest {key} = {manifest.get(key)!r}, timeline has {val!r}")
    if manifest.get("format") != 1:
        err("manifest format must be 1")
    if not isinstance(manifest.get("name"), str):
        err("manifest name missing")

    # shape of the conversations (warnings only)
    for ns, sess in sorted(sessions.items()):
        if not 4 <= len(sess) <= 8:
            warnings.append(f"{ns}: {len(sess)} sessions (expected 4-8)")
        for s, cnt in sorted(sess.items()):
            if not 10 <= cnt <= 30:
                warnings.append(f"{ns} session {s}: {cnt} turns (expected 10-30)")
    for ns in conv_lang:
        if q_per_ns[ns] == 0:
            warnings.append(f"{ns}: no questions")

    stats = {"conversations": len(conv_lang), "writes": nwrites, "queries": nqueries,
             "categories": dict(sorted(cats.items())), "query_lang": dict(sorted(q_lang.items())),
             "conv_lang": dict(sorted(Counter(conv_lang.values()).items()))}
    return errors, warnings, refs, stats


def main(folders):
    if not folders:
        print(__doc__)
        return 2
    bad = False
    seen = {}
    for folder in folders:
        errors, warnings, refs, stats = check_folder(folder)
        for r in refs:
            if r in seen:
                errors.append(f"ref {r} also used in {seen[r]}")
            seen[r] = folder
        status = "OK" if not errors else f"{len(errors)} error(s)"
        print(f"{folder}: {status}; {json.dumps(stats, ensure_ascii=False)}")
        for e in errors[:50]:
            print(f"  ERROR {e}")
        for w in warnings[:50]:
            print(f"  warning {w}")
        bad |= bool(errors)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
