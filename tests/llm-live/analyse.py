#!/usr/bin/env python3
"""Checks and summarises a live LLM review run.

Reads the review cycles that `run` recorded (one JSON object per line: phase, the cycle's
`hindsight review --json` report, the wall-clock time, and which lines of the proxy log the
cycle produced) and the proxy log (every chat request and answer). For every cycle it prints
the judge, the tokens used against the budget, the pairs considered, judged and deferred, the
decisions, the requests sent, the re-asks, the answers that broke the schema, and the
generation speed; then every verdict the model gave, next to the two memories it was about.

Invariants, each a failure when broken:
  - the cycle's judge is the LLM judge ("llm:<model>");
  - tokens_used <= token_budget;
  - tokens_used > 0 whenever the cycle sent a request, and the first cycle of a phase sends one;
  - tokens_used equals the usage the chat server reported for the cycle's answers;
  - every considered pair is judged or deferred: pairs_considered == pairs_judged + pairs_deferred;
  - pairs deferred by one cycle are taken up by the next: it considers at least as many pairs
    and sends requests to the model again;
  - in a phase marked "expect_progress", a cycle after one that deferred pairs judges at least
    one of them (phases whose answers are known to be unusable are not marked);
  - in a phase marked "expect_deferral", the first cycle defers pairs (the budget bites).

Usage: analyse.py --cycles cycles.jsonl --proxy-log proxy.jsonl [--server-log llama.log]
                  [--summary summary.json]
Exit status 1 when an invariant is broken.
"""

import argparse
import json
import re
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy import listed_pairs  # noqa: E402

RELATIONS = {
    "duplicate",
    "update",
    "inference_refuted",
    "source_conflict",
    "undecidable",
    "unrelated",
}
NEEDS_SIDE = {"update", "inference_refuted"}


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def parse_json_like_the_judge(text):
    """The judge takes the whole answer, or failing that the span from the first '{' to the
    last '}'."""
    text = (text or "").strip()
    try:
        return json.loads(text)
    except Exception:
        pass
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            return json.loads(text[start : end + 1])
        except Exception:
            pass
    raise ValueError("not JSON")


def asked_pairs(record):
    """The pairs a request asked about: {id: pair line as dict}."""
    messages = (record.get("request") or {}).get("messages") or []
    return {item["id"]: item for item in listed_pairs(messages)}


def check_answer(record, asked):
    """Mirrors the judge's schema check. Returns (valid verdicts {id: entry}, problems [str])."""
    if record.get("status") != 200:
        return {}, [f"HTTP {record.get('status')}"]
    answer = record.get("answer") or {}
    content = answer.get("content")
    try:
        value = parse_json_like_the_judge(content)
    except ValueError:
        return {}, ["not JSON"]
    if not isinstance(value, dict):
        return {}, ["JSON but not an object"]
    entries = value.get("verdicts")
    if not isinstance(entries, list):
        return {}, ['no "verdicts" array']
    problems = []
    by_id = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            problems.append("an entry without a string id")
            continue
        if entry["id"] not in asked:
            problems.append(f"a verdict for {entry['id']!r}, which was not asked about")
            continue
        by_id.setdefault(entry["id"], []).append(entry)
    valid = {}
    for pid in asked:
        got = by_id.get(pid, [])
        if not got:
            problems.append(f"{pid}: no verdict")
            continue
        if len(got) > 1:
            problems.append(f"{pid}: {len(got)} verdicts")
            continue
        entry = got[0]
        relation = entry.get("relation")
        side = entry.get("newer_or_fact")
        if relation not in RELATIONS:
            problems.append(f"{pid}: relation {relation!r} is not allowed")
        elif side not in (None, "a", "b"):
            problems.append(f"{pid}: newer_or_fact {side!r}")
        elif relation in NEEDS_SIDE and side is None:
            problems.append(f"{pid}: {relation} without newer_or_fact")
        elif not isinstance(entry.get("reason"), str):
            problems.append(f"{pid}: no reason")
        else:
            valid[pid] = entry
    return valid, problems


def pair_signature(pair):
    return json.dumps(pair, sort_keys=True, ensure_ascii=False)


def llama_eval_speeds(path):
    """(generated tokens, generation ms) and (prompt tokens, prompt ms) summed over the
    `llama_perf_context_print` lines of the llama.cpp server log."""
    gen = [0, 0.0]
    prompt = [0, 0.0]
    if not path:
        return None
    pat = re.compile(r"(prompt eval|eval) time =\s*([\d.]+) ms /\s*(\d+) (?:tokens|runs)")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = pat.search(line)
                if not m:
                    continue
                target = prompt if m.group(1) == "prompt eval" else gen
                target[0] += int(m.group(3))
                target[1] += float(m.group(2))
    except FileNotFoundError:
        return None
    return {"gen_tokens": gen[0], "gen_ms": gen[1], "prompt_tokens": prompt[0], "prompt_ms": prompt[1]}


def short(text, n=60):
    text = text.replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", required=True)
    parser.add_argument("--proxy-log", required=True)
    parser.add_argument("--server-log")
    parser.add_argument("--summary")
    args = parser.parse_args()

    cycles = load_jsonl(args.cycles)
    try:
        requests = load_jsonl(args.proxy_log)
    except FileNotFoundError:
        requests = []
    failures = []
    rows = []
    verdict_rows = []
    totals = {
        "requests": 0,
        "reasks": 0,
        "answers_fully_valid": 0,
        "answers_partly_valid": 0,
        "answers_unusable": 0,
        "answers_cut_off": 0,
        "completion_tokens": 0,
        "prompt_tokens": 0,
        "request_seconds": 0.0,
    }
    previous = {}
    for c in cycles:
        phase = c["phase"]
        r = c["report"]["cycle"]
        name = f"{phase}#{c['index']}"
        mine = requests[c["proxy_from"] : c["proxy_to"]]
        reasks = 0
        fully = partly = unusable = cut = 0
        completion = prompt = 0
        seconds = 0.0
        problems_seen = []
        last_sigs = None
        example_bad = None
        for rec in mine:
            asked = asked_pairs(rec)
            sigs = {pair_signature(p) for p in asked.values()}
            if last_sigs is not None and sigs and sigs <= last_sigs:
                reasks += 1
            last_sigs = sigs
            valid, problems = check_answer(rec, asked)
            if len(valid) == len(asked) and asked:
                fully += 1
            elif valid:
                partly += 1
            else:
                unusable += 1
            if problems:
                problems_seen.extend(problems)
                if example_bad is None:
                    example_bad = short(str((rec.get("answer") or {}).get("content")), 160)
            ans = rec.get("answer") or {}
            if ans.get("finish_reason") == "length":
                cut += 1
            usage = ans.get("usage") or {}
            completion += int(usage.get("completion_tokens") or 0)
            prompt += int(usage.get("prompt_tokens") or 0)
            seconds += float(rec.get("elapsed_s") or 0)
            for pid, entry in valid.items():
                pair = asked[pid]
                verdict_rows.append(
                    {
                        "cycle": name,
                        "a": f"[{pair['a']['source']} {pair['a']['occurred_at'][:10]}] {pair['a']['content']}",
                        "b": f"[{pair['b']['source']} {pair['b']['occurred_at'][:10]}] {pair['b']['content']}",
                        "relation": entry["relation"],
                        "newer_or_fact": entry.get("newer_or_fact") if entry["relation"] in NEEDS_SIDE else None,
                        "reason": entry.get("reason", ""),
                    }
                )
        row = {
            "cycle": name,
            "server_cycle": r["cycle"],
            "judge": r["judge"],
            "changed": r["changed"],
            "considered": r["pairs_considered"],
            "judged": r["pairs_judged"],
            "deferred": r["pairs_deferred"],
            "tokens_used": r["tokens_used"],
            "token_budget": r["token_budget"],
            "decisions": r["decisions"],
            "conflicts_opened": len(c["report"].get("conflicts_opened") or []),
            "requests": len(mine),
            "schema_added": sum(1 for rec in mine if rec.get("schema_added")),
            "reasks": reasks,
            "answers_fully_valid": fully,
            "answers_partly_valid": partly,
            "answers_unusable": unusable,
            "answers_cut_off": cut,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "request_seconds": round(seconds, 2),
            "wall_seconds": round(c["wall_s"], 2),
            "server_took_ms": round(c["report"]["took_micros"] / 1000),
            "gen_tokens_per_s_end_to_end": round(completion / seconds, 1) if seconds else None,
            "problems": problems_seen,
            "example_bad_answer": example_bad,
        }
        rows.append(row)
        for k in ("requests", "reasks", "completion_tokens", "prompt_tokens"):
            totals[k] += row[k]
        totals["answers_fully_valid"] += fully
        totals["answers_partly_valid"] += partly
        totals["answers_unusable"] += unusable
        totals["answers_cut_off"] += cut
        totals["request_seconds"] += seconds

        def fail(msg):
            failures.append(f"{name}: {msg}")

        if not str(r["judge"]).startswith("llm:"):
            fail(f"judge is {r['judge']!r}, not the LLM judge")
        if r["tokens_used"] > r["token_budget"]:
            fail(f"tokens_used {r['tokens_used']} > token_budget {r['token_budget']}")
        if mine and r["tokens_used"] <= 0:
            fail(f"{len(mine)} request(s) sent but tokens_used is {r['tokens_used']}")
        if c["index"] == 1 and (not mine or r["tokens_used"] <= 0):
            fail("the first cycle of the phase sent no request / spent no tokens")
        if r["tokens_used"] != prompt + completion:
            fail(
                f"tokens_used {r['tokens_used']} differs from the usage the server reported "
                f"({prompt} prompt + {completion} completion = {prompt + completion})"
            )
        if r["pairs_considered"] != r["pairs_judged"] + r["pairs_deferred"]:
            fail(
                f"pairs lost: considered {r['pairs_considered']} != judged {r['pairs_judged']} "
                f"+ deferred {r['pairs_deferred']}"
            )
        prev = previous.get(phase)
        if prev is not None and prev["deferred"] > 0:
            if r["pairs_considered"] < prev["deferred"]:
                fail(
                    f"the previous cycle deferred {prev['deferred']} pair(s) but this one "
                    f"considers only {r['pairs_considered']}"
                )
            if not mine:
                fail(f"the previous cycle deferred {prev['deferred']} pair(s) but this one sent no request")
            if c.get("expect_progress") and r["pairs_judged"] == 0:
                fail(f"the previous cycle deferred {prev['deferred']} pair(s) and this one judged none")
        if c["index"] == 1 and c.get("expect_deferral") and r["pairs_deferred"] == 0:
            fail("the small budget was expected to defer pairs in the first cycle, but none were")
        previous[phase] = {"deferred": r["pairs_deferred"]}

    # Report.
    print("\n== review cycles ==")
    header = (
        f"{'cycle':<14} {'judge':<32} {'consid':>6} {'judged':>6} {'defer':>5} "
        f"{'tokens/budget':>14} {'req':>4} {'reask':>5} {'bad':>4} {'cut':>4} "
        f"{'wall s':>7} {'gen tok/s':>9}  decisions"
    )
    print(header)
    for row in rows:
        bad = row["answers_partly_valid"] + row["answers_unusable"]
        speed = row["gen_tokens_per_s_end_to_end"]
        decisions = ", ".join(f"{k} {v}" for k, v in sorted(row["decisions"].items())) or "-"
        print(
            f"{row['cycle']:<14} {short(row['judge'], 32):<32} {row['considered']:>6} {row['judged']:>6} "
            f"{row['deferred']:>5} {str(row['tokens_used']) + '/' + str(row['token_budget']):>14} "
            f"{row['requests']:>4} {row['reasks']:>5} {bad:>4} {row['answers_cut_off']:>4} "
            f"{row['wall_seconds']:>7} {speed if speed is not None else '-':>9}  {decisions}"
        )
    print(
        "  req = chat requests; reask = requests that asked again about pairs of the previous "
        "request; bad = answers with at least one pair lacking a valid verdict; cut = answers "
        "stopped at max_tokens; gen tok/s = completion tokens / request time (prompt "
        "processing included)"
    )
    guided_rows = [row["cycle"] for row in rows if row["schema_added"]]
    if guided_rows:
        print(f"  the proxy added a verdict schema to the requests of: {', '.join(guided_rows)}")
    for row in rows:
        if row["problems"]:
            counts = {}
            for p in row["problems"]:
                key = re.sub(r"^p\d+: ", "", p)
                counts[key] = counts.get(key, 0) + 1
            listed = "; ".join(f"{k} (x{v})" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
            print(f"  {row['cycle']} schema problems: {listed}")
            if row.get("example_bad_answer"):
                print(f"    e.g. the answer {row['example_bad_answer']!r}")

    speeds = llama_eval_speeds(args.server_log)
    print("\n== totals ==")
    print(
        f"requests {totals['requests']}, re-asks {totals['reasks']}, answers fully valid "
        f"{totals['answers_fully_valid']}, partly valid {totals['answers_partly_valid']}, unusable "
        f"{totals['answers_unusable']}, cut off at max_tokens {totals['answers_cut_off']}"
    )
    if totals["request_seconds"]:
        print(
            f"server-reported tokens: {totals['prompt_tokens']} prompt + "
            f"{totals['completion_tokens']} completion in {totals['request_seconds']:.1f} s of "
            f"requests: {totals['completion_tokens'] / totals['request_seconds']:.1f} completion "
            f"tokens/s end to end"
        )
    if speeds and speeds["gen_ms"]:
        print(
            f"llama.cpp timings: generation {speeds['gen_tokens']} tokens in "
            f"{speeds['gen_ms'] / 1000:.1f} s = {speeds['gen_tokens'] / (speeds['gen_ms'] / 1000):.1f} "
            f"tokens/s; prompt processing {speeds['prompt_tokens']} tokens in "
            f"{speeds['prompt_ms'] / 1000:.1f} s = "
            f"{(speeds['prompt_tokens'] / (speeds['prompt_ms'] / 1000)) if speeds['prompt_ms'] else 0:.0f} tokens/s"
        )

    print("\n== verdicts the model gave (valid ones; not checked for correctness) ==")
    for v in verdict_rows:
        side = f" ({v['newer_or_fact']})" if v["newer_or_fact"] else ""
        print(f"{v['cycle']:<14} {v['relation'] + side:<22} a: {short(v['a'], 70)}")
        print(f"{'':<14} {'':<22} b: {short(v['b'], 70)}")
        print(f"{'':<14} {'':<22} reason: {short(v['reason'], 90)}")

    if args.summary:
        with open(args.summary, "w", encoding="utf-8") as f:
            json.dump(
                {"cycles": rows, "totals": totals, "llama_timings": speeds, "verdicts": verdict_rows, "failures": failures},
                f,
                ensure_ascii=False,
                indent=2,
            )

    print("\n== invariants ==")
    if failures:
        for f in failures:
            print(f"FAIL {f}")
        checked = len(rows)
        print(f"{len(failures)} invariant(s) broken over {checked} cycle(s)")
        return 1
    print(f"all invariants hold over {len(rows)} cycle(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
