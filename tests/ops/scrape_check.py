"""Asks a Prometheus that scrapes one Hindsight node for the series the node must export, and
checks that the alert rules it loaded evaluate. Run by tests/ops/prometheus-scrape.

Usage: scrape_check.py PROMETHEUS_URL NODE_HTTP_ADDR
"""

import json
import pathlib
import sys
import time
import urllib.parse
import urllib.request

# Series that must exist after the script's writes, recalls and review, as PromQL selectors.
EXPECTED = [
    # Requests
    'hindsight_grpc_requests_total{service="hindsight.v1.MemoryService",method="Write",code="OK"}',
    'hindsight_grpc_requests_total{method="Recall",code="OK"}',
    'hindsight_grpc_request_duration_seconds_bucket{method="Recall",le="0.01"}',
    'hindsight_grpc_request_duration_seconds_bucket{method="Write",le="+Inf"}',
    'hindsight_http_requests_total{route="/v1/banks/{bank}/recall",status="200"}',
    'hindsight_http_request_duration_seconds_bucket{le="0.1"}',
    # Writes, recall, embedding
    'hindsight_writes_total{disposition="created"}',
    'hindsight_writes_total{disposition="merged"}',
    'hindsight_writes_total{disposition="quarantined"}',
    "hindsight_recall_duration_seconds_bucket",
    'hindsight_write_stage_duration_seconds_bucket{stage="prepare"}',
    'hindsight_write_stage_duration_seconds_bucket{stage="commit"}',
    'hindsight_write_stage_duration_seconds_bucket{stage="searchable"}',
    'hindsight_recall_arm_duration_seconds_bucket{arm="semantic"}',
    'hindsight_recall_arm_duration_seconds_bucket{arm="keyword"}',
    'hindsight_recall_arm_duration_seconds_bucket{arm="entity"}',
    'hindsight_recall_arm_duration_seconds_bucket{arm="temporal"}',
    "hindsight_embedding_duration_seconds_bucket",
    "hindsight_embedding_texts_total",
    # Store of record
    "hindsight_store_flush_duration_seconds_bucket",
    "hindsight_store_batch_wait_seconds_bucket",
    # Guard
    "hindsight_guard_quarantined_total",
    # Review
    'hindsight_review_cycles_total{trigger="request"}',
    'hindsight_review_cycle_duration_seconds_bucket{le="600"}',
    "hindsight_review_pairs_considered_total",
    "hindsight_review_pairs_judged_total",
    "hindsight_review_pairs_deferred_total",
    "hindsight_review_tokens_used_total",
    "hindsight_review_token_budget_total",
    'hindsight_review_last_tokens_used{bank="ops/scrape"}',
    'hindsight_review_last_token_budget{bank="ops/scrape"}',
    'hindsight_review_backlog{bank="ops/scrape"}',
    "hindsight_review_decisions_total",
    "hindsight_review_conflicts_opened_total",
    "hindsight_memories_expired_total",
    "hindsight_memories_decayed_total",
    "hindsight_memories_archived_total",
    "hindsight_memories_purged_total",
    # Raft and store
    "hindsight_raft_term",
    "hindsight_raft_leader_id",
    "hindsight_raft_has_leader",
    "hindsight_raft_is_leader",
    "hindsight_raft_last_log_index",
    "hindsight_raft_commit_index",
    "hindsight_raft_applied_index",
    "hindsight_raft_apply_lag_entries",
    "hindsight_raft_snapshot_index",
    "hindsight_raft_purged_index",
    "hindsight_raft_voters",
    "hindsight_raft_entries_proposed_total",
    "hindsight_raft_commands_proposed_total",
    "hindsight_store_size_bytes",
    "hindsight_placement_version",
    "hindsight_partition_replicas",
    "hindsight_partitions_led",
    "hindsight_partitions_without_leader",
    # Banks and indexes
    "hindsight_banks",
    "hindsight_banks_loaded",
    'hindsight_bank_memories{bank="ops/scrape"}',
    'hindsight_index_vectors{bank="ops/scrape"}',
    'hindsight_index_tombstones{bank="ops/scrape"}',
    'hindsight_index_graph_points{bank="ops/scrape"}',
    'hindsight_index_unsearched{bank="ops/scrape"}',
    'hindsight_index_rebuilding{bank="ops/scrape"}',
    'hindsight_index_keyword_docs{bank="ops/scrape"}',
    'hindsight_index_keyword_terms{bank="ops/scrape"}',
    'hindsight_index_entity_docs{bank="ops/scrape"}',
    'hindsight_index_disk_bytes{bank="ops/scrape"}',
    'hindsight_bank_heap_bytes{bank="ops/scrape",part="records"}',
    'hindsight_bank_heap_bytes{bank="ops/scrape",part="vectors"}',
    'hindsight_bank_heap_bytes{bank="ops/scrape",part="keyword"}',
    # Node
    "hindsight_data_dir_available_bytes",
    "hindsight_data_dir_capacity_bytes",
    "hindsight_process_resident_memory_bytes",
    "hindsight_node_ready",
    'hindsight_build_info{embedding_model=~"hashing.*"}',
]

# Values the script's work pins down: (PromQL expression, expected value).
VALUES = [
    ("hindsight_raft_has_leader", 1),
    ("hindsight_raft_is_leader", 1),
    ("hindsight_raft_voters", 1),
    # Partitions are off by default: no table, no replicas.
    ("hindsight_placement_version", 0),
    ("hindsight_partition_replicas", 0),
    ("hindsight_node_ready", 1),
    ("hindsight_banks", 1),
    ('hindsight_writes_total{disposition="quarantined"}', 1),
    ('hindsight_writes_total{disposition="merged"}', 1),
    ("hindsight_memories_expired_total", 1),
    ('sum(hindsight_review_cycles_total{trigger="request"})', 1),
    ('sum(hindsight_grpc_requests_total{method="Recall",code="OK"})', 2),
    # A write is acknowledged once applied: nothing waits to be applied on a single node.
    ("hindsight_raft_apply_lag_entries", 0),
    # Quantiles over real buckets are numbers (a summary would give no buckets to work with).
    # A loaded bank with memories holds their records, vectors and terms on the heap.
    ('hindsight_bank_heap_bytes{part="records"} > 0', None),
    ('hindsight_bank_heap_bytes{part="vectors"} > 0', None),
    ('hindsight_bank_heap_bytes{part="keyword"} > 0', None),
    ("histogram_quantile(0.5, sum by (le) (hindsight_grpc_request_duration_seconds_bucket)) >= 0", None),
    ("histogram_quantile(0.99, sum by (le) (hindsight_recall_duration_seconds_bucket)) > 0", None),
]


def get(prometheus, path, **params):
    url = f"{prometheus}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = json.load(answer)
    if body.get("status") != "success":
        raise RuntimeError(f"{url}: {body}")
    return body["data"]


def query(prometheus, expr):
    return get(prometheus, "/api/v1/query", query=expr)["result"]


def wait_until(what, check, timeout=60.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last is True:
                return
        except (OSError, RuntimeError) as error:
            last = error
        time.sleep(0.5)
    raise SystemExit(f"FAIL: {what}: {last}")


def main():
    prometheus, node = sys.argv[1], sys.argv[2]

    def target_up():
        targets = get(prometheus, "/api/v1/targets")["activeTargets"]
        up = [t for t in targets if t["labels"].get("instance") == node and t["health"] == "up"]
        return True if up else [(t["scrapeUrl"], t["health"], t.get("lastError")) for t in targets]

    wait_until("Prometheus scrapes the node", target_up)

    missing = []

    def all_present():
        missing[:] = [s for s in EXPECTED if not query(prometheus, s)]
        return True if not missing else f"missing {missing}"

    wait_until("every expected series is in Prometheus", all_present)
    print(f"ok: {len(EXPECTED)} expected series present")

    for expr, expected in VALUES:
        result = query(prometheus, expr)
        if not result:
            raise SystemExit(f"FAIL: {expr} has no value")
        value = float(result[0]["value"][1])
        if expected is not None and value != expected:
            raise SystemExit(f"FAIL: {expr} = {value}, expected {expected}")
        print(f"ok: {expr} = {value:g}")

    names = {r["metric"]["__name__"] for r in query(prometheus, '{__name__=~"hindsight_.+"}')}
    print(f"ok: {len(names)} hindsight_* series names scraped")

    # Every query of the Grafana dashboard is valid PromQL and evaluates; most have data already.
    dashboard = pathlib.Path(__file__).resolve().parents[2] / "deploy/grafana/dashboards/hindsight.json"
    exprs = [
        t["expr"]
        for p in json.loads(dashboard.read_text())["panels"]
        for t in p.get("targets", [])
    ]
    with_data = 0
    for expr in exprs:
        concrete = (
            expr.replace("$__rate_interval", "1m").replace("$instance", ".*").replace("$bank", ".*")
        )
        try:
            with_data += bool(query(prometheus, concrete))
        except (OSError, RuntimeError) as error:
            raise SystemExit(f"FAIL: dashboard query {expr!r}: {error}")
    print(f"ok: {len(exprs)} dashboard queries evaluate, {with_data} with data")

    # The alert rules loaded and evaluate without errors against real data.
    def rules_evaluated():
        groups = get(prometheus, "/api/v1/rules")["groups"]
        rules = [r for g in groups for r in g["rules"]]
        bad = [(r["name"], r["health"], r.get("lastError")) for r in rules if r["health"] != "ok"]
        if not rules:
            return "no rules loaded"
        return True if not bad else f"rules not healthy: {bad}"

    wait_until("the alert rules evaluate", rules_evaluated)
    groups = get(prometheus, "/api/v1/rules")["groups"]
    rules = [r for g in groups for r in g["rules"]]
    firing = [r["name"] for r in rules if r.get("state") == "firing"]
    print(f"ok: {len(rules)} rules in {len(groups)} groups evaluate; firing: {firing or 'none'}")
    # A healthy single node fires nothing.
    if firing:
        raise SystemExit(f"FAIL: alerts fire on a healthy node: {firing}")


if __name__ == "__main__":
    main()
