// The client against one real node without auth: every common route, its answer's fields and the
// errors the node gives.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  AlreadyExists,
  HindsightClient,
  HindsightError,
  InvalidArgument,
  NotFound,
} from "../dist/index.js";
import { Node, ULID, newBank } from "./node.mjs";

let node;
let hs;

before(async () => {
  node = await Node.start();
  hs = new HindsightClient({ baseUrl: node.url, apiKey: "" });
});

after(async () => {
  await node?.stop();
});

/** The error a promise rejects with; fails when it resolves. */
async function refusal(promise) {
  try {
    const answer = await promise;
    assert.fail(`expected a refusal, got ${JSON.stringify(answer)}`);
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    return error;
  }
}

describe("memories", () => {
  test("a write is recalled with its score, explain and recall id", async () => {
    const bank = newBank();
    const written = await hs.write(bank, {
      content: "The user prefers invoices as PDF",
      provenance: { source: "user" },
      tags: ["billing"],
    });
    assert.equal(written.disposition, "created");
    assert.match(written.id, ULID);
    assert.equal(written.merged_into, null);
    await hs.write(bank, { content: "Deploys happen on Thursdays", provenance: { source: "user" } });

    const result = await hs.recall(bank, { query: "which format for invoices?", top_k: 3 });
    assert.match(result.recall_id, ULID);
    assert.ok(result.hits.length >= 1);
    const [hit] = result.hits;
    assert.deepEqual(Object.keys(hit).sort(), ["explain", "memory", "score", "status"]);
    assert.equal(hit.memory.content, "The user prefers invoices as PDF");
    assert.equal(hit.memory.id, written.id);
    assert.equal(hit.memory.bank, bank);
    assert.deepEqual(hit.memory.tags, ["billing"]);
    assert.equal(hit.memory.provenance.source, "user");
    assert.equal(hit.status.name, "active");
    assert.equal(typeof hit.score, "number");
    assert.ok(hit.score > 0 && hit.score <= 1, `score ${hit.score}`);
    assert.equal(hit.explain.score, hit.score);
    const arms = hit.explain.arms.map((a) => a.arm);
    assert.ok(arms.includes("semantic") && arms.includes("keyword"), `arms ${arms}`);
    assert.ok(hit.explain.arms.every((a) => a.rank >= 1));
    assert.equal(hit.explain.status, "active");
    assert.ok(Array.isArray(hit.explain.flags));
    assert.equal(result.time_window, null);
    if (result.hits.length > 1) assert.ok(result.hits[0].score >= result.hits[1].score);

    // A string is the query alone.
    const again = await hs.recall(bank, "invoice format");
    assert.equal(again.hits[0].memory.id, written.id);
    assert.notEqual(again.recall_id, result.recall_id);
  });

  test("a duplicate write merges into the first", async () => {
    const bank = newBank();
    const first = await hs.write(bank, { content: "The staging database listens on port 5433", provenance: { source: "user" } });
    const second = await hs.write(bank, { content: "The staging database listens on port 5433", provenance: { source: "user" } });
    assert.equal(second.disposition, "merged");
    assert.equal(second.id, first.id);
    assert.equal(second.merged_into, first.id);
    assert.ok(second.similarity >= 0.92, `similarity ${second.similarity}`);
    const { memory } = await hs.get(first.id);
    assert.equal(memory.support.count, 2);
    assert.equal(memory.support.merged.length, 1);
    const listed = await hs.listMemories(bank);
    assert.deepEqual(listed.memories.map((m) => m.id), [first.id]);
  });

  test("a batch is written in order and recalled by tag", async () => {
    const bank = newBank();
    const batch = await hs.writeBatch(bank, [
      "Deploys happen on Thursdays",
      { content: "The staging database listens on port 5433", tags: ["infra"] },
    ]);
    assert.deepEqual(batch.outcomes.map((o) => o.disposition), ["created", "created"]);
    const result = await hs.recall(bank, { query: "staging database port", filters: { tags: ["infra"] } });
    assert.deepEqual(result.hits.map((h) => h.memory.id), [batch.outcomes[1].id]);
  });

  test("a recall over several banks answers from each", async () => {
    const a = newBank("ts-a");
    const b = newBank("ts-b");
    await hs.write(a, { content: "Releases ship on Tuesdays", provenance: { source: "user" } });
    await hs.write(b, { content: "Releases freeze in the last week of December", provenance: { source: "user" } });
    const result = await hs.recall([a, b], { query: "when can we ship a release?", intent: "facts" });
    assert.deepEqual([...new Set(result.hits.map((h) => h.memory.bank))].sort(), [a, b].sort());
  });

  test("get and trace answer the record and its history", async () => {
    const bank = newBank();
    const written = await hs.write(bank, {
      content: "The on-call rotation changes on Mondays",
      tags: ["ops"],
      metadata: { team: "platform" },
    });
    const { memory } = await hs.get(written.id, { consistency: "linearizable" });
    assert.equal(memory.content, "The on-call rotation changes on Mondays");
    assert.deepEqual(memory.tags, ["ops"]);
    assert.equal(memory.metadata.team, "platform");
    assert.equal(memory.kind, "semantic");
    assert.equal(memory.provenance.source, "agent");
    assert.equal(memory.status.name, "active");

    const trace = await hs.trace(written.id);
    assert.equal(trace.memory.id, written.id);
    assert.equal(trace.history[0].kind, "created");
    assert.equal(trace.history[0].actor, "write");
    assert.match(trace.integrity, /^verified/);
  });

  test("forget archives the memory and recall leaves it out", async () => {
    const bank = newBank();
    const kept = await hs.write(bank, { content: "The office closes at six", provenance: { source: "user" } });
    const gone = await hs.write(bank, { content: "The staging cluster runs in eu-west-1", provenance: { source: "user" } });
    const forgotten = await hs.forget(gone.id, { reason: "moved to the infra bank" });
    assert.deepEqual(forgotten.changed, [gone.id]);
    const { memory } = await hs.get(gone.id);
    assert.equal(memory.status.name, "archived");
    const trace = await hs.trace(gone.id);
    assert.ok(trace.history.some((h) => h.reason.includes("moved to the infra bank")), JSON.stringify(trace.history));
    const result = await hs.recall(bank, "staging cluster region");
    assert.ok(!result.hits.some((h) => h.memory.id === gone.id));
    assert.ok(result.hits.some((h) => h.memory.id === kept.id));

    const hard = await hs.forget(kept.id, { hard: true });
    assert.deepEqual(hard.changed, [kept.id]);
    assert.ok((await refusal(hs.get(kept.id))) instanceof NotFound);
  });
});

describe("feedback and the retrieval log", () => {
  test("feedback on a recall moves the memory's confidence once", async () => {
    const bank = newBank();
    const written = await hs.write(bank, { content: "The user prefers invoices as PDF", provenance: { source: "user" } });
    const result = await hs.recall(bank, "invoice format");
    assert.equal(result.hits[0].memory.id, written.id);

    const logged = await hs.getRecall(result.recall_id);
    assert.equal(logged.id, result.recall_id);
    assert.equal(logged.request.query, "invoice format");
    assert.equal(logged.hits[0].memory_id, written.id);

    const given = await hs.feedback({ recall_id: result.recall_id, memory_id: written.id, outcome: "helpful" });
    assert.equal(given.applied, true);
    assert.ok(given.confidence_after > given.confidence_before, JSON.stringify(given));
    assert.equal(given.memory.confidence, given.confidence_after);
    const repeated = await hs.feedback({ recall_id: result.recall_id, memory_id: written.id, outcome: "helpful" });
    assert.equal(repeated.applied, false);

    const after = await hs.getRecall(result.recall_id);
    assert.deepEqual(after.feedback.map((f) => [f.memory_id, f.outcome]), [[written.id, "helpful"]]);
    const listed = await hs.listRecalls({ bank, query_contains: "INVOICE" });
    assert.deepEqual(listed.recalls.map((r) => r.id), [result.recall_id]);
  });

  test("feedback on a recall that did not return the memory is refused", async () => {
    const bank = newBank();
    const a = await hs.write(bank, { content: "Backups run nightly at two", provenance: { source: "user" } });
    const result = await hs.recall(bank, "backups");
    const error = await refusal(hs.feedback({ recall_id: result.recall_id, memory_id: "01M8YE12SMHKP96BBWHX8RHQSJ", outcome: "helpful" }));
    assert.ok(error instanceof HindsightError, String(error));
    assert.ok(error.status >= 400 && error.status < 500);
    assert.ok(result.hits.some((h) => h.memory.id === a.id));
  });
});

describe("review, conflicts, reflection", () => {
  test("review supersedes a changed preference", async () => {
    const bank = newBank();
    const old = await hs.write(bank, {
      content: "I prefer green tea in the afternoon",
      provenance: { source: "user" },
      occurred_at: new Date(Date.now() - 2 * 86_400_000).toISOString(),
    });
    const changed = await hs.write(bank, { content: "I prefer black coffee in the afternoon now", provenance: { source: "user" } });
    const review = await hs.review(bank);
    assert.equal(review.bank, bank);
    assert.equal(review.cycle.judge, "rules");
    assert.equal(review.cycle.decisions.supersede, 1);
    assert.ok(review.updated.includes(old.id));

    const { memory } = await hs.get(old.id);
    assert.equal(memory.status.name, "superseded");
    assert.equal(memory.status.superseded_by, changed.id);
    const result = await hs.recall(bank, "what drink does the user prefer?");
    assert.equal(result.hits[0].memory.id, changed.id);
  });

  test("review expires a working memory past its time to live", async () => {
    const bank = newBank();
    const working = await hs.write(bank, {
      content: "The build cache is warm",
      kind: "working",
      ttl_seconds: 60,
      occurred_at: "2020-01-01T00:00:00Z",
    });
    const review = await hs.review(bank, {});
    assert.deepEqual(review.expired, [working.id]);
  });

  test("the conflict queue starts empty and an unknown conflict is not found", async () => {
    const bank = newBank();
    await hs.write(bank, "Standups are at nine");
    assert.deepEqual(await hs.listConflicts(bank, { include_resolved: true }), { conflicts: [] });
    const error = await refusal(hs.resolveConflict(bank, 99, { outcome: "keep_a" }));
    assert.ok(error instanceof NotFound, String(error));
    assert.match(error.message, /conflict 99/);
  });

  test("a dry-run reflection writes nothing", async () => {
    const bank = newBank();
    const reflection = await hs.reflect(bank, {
      goal: "Deploy the billing service",
      steps: ["ran the migration", "the deploy failed because the migration lock was held", "released the lock"],
      outcome: "succeeded",
      dry_run: true,
    });
    assert.equal(reflection.reflector, "rules");
    assert.ok(reflection.memories.every((m) => m.written === null));
    // Nothing written, so not even the bank came to be.
    assert.ok((await refusal(hs.listMemories(bank))) instanceof NotFound);
  });
});

describe("banks and the node", () => {
  test("a bank is created, read, listed, changed and deleted", async () => {
    const bank = newBank();
    const created = await hs.createBank(bank, { description: "agent 7, support desk", dedup_threshold: 0.95 });
    assert.equal(created.bank.name, bank);
    assert.equal(created.bank.description, "agent 7, support desk");
    assert.equal(created.bank.dedup_threshold, 0.95);
    assert.ok((await refusal(hs.createBank(bank))) instanceof AlreadyExists);

    const written = await hs.write(bank, "Tickets are triaged within an hour");
    const info = await hs.getBank(bank);
    assert.equal(info.info.bank.name, bank);
    assert.equal(info.info.memory_count, 1);
    const listed = await hs.listBanks();
    assert.ok(listed.banks.some((b) => b.bank.name === bank));

    const updated = await hs.updateBank(bank, { description: "agent 7, billing" });
    assert.equal(updated.bank.description, "agent 7, billing");
    assert.equal(updated.bank.dedup_threshold, 0.95);

    const exported = await hs.exportBank(bank);
    assert.ok(exported.lines.length >= 2);
    assert.equal(exported.next, null);

    assert.deepEqual(await hs.deleteBank(bank), { memories_removed: 1 });
    assert.ok((await refusal(hs.getBank(bank))) instanceof NotFound);
    assert.ok((await refusal(hs.get(written.id))) instanceof NotFound);

    const imported = await hs.importBank(bank, { lines: exported.lines });
    assert.equal(imported.memories, 1);
    assert.equal((await hs.get(written.id)).memory.content, "Tickets are triaged within an hour");
    assert.equal((await hs.getBank(bank)).info.bank.description, "agent 7, billing");
  });

  test("status and readiness", async () => {
    const status = await hs.status();
    assert.equal(status.ready, true);
    assert.equal(status.node_id, 1);
    assert.equal(status.embedding_model.startsWith("hashing"), true);
    assert.equal(await hs.ready(), true);
    const cluster = await hs.clusterStatus();
    assert.equal(cluster.node_id, 1);
  });
});

describe("errors", () => {
  test("an invalid request is InvalidArgument with the node's message", async () => {
    const bank = newBank();
    const error = await refusal(hs.recall(bank, { query: "x", top_k: 0 }));
    assert.ok(error instanceof InvalidArgument, String(error));
    assert.ok(error instanceof HindsightError);
    assert.equal(error.code, "invalid_argument");
    assert.equal(error.status, 400);
    assert.equal(error.message, "top_k must be between 1 and 200, got 0");
    assert.deepEqual(error.body, { code: "invalid_argument", message: error.message });
    assert.equal(error.name, "InvalidArgument");

    const unknownField = await refusal(hs.write(bank, { content: "x", colour: "blue" }));
    assert.ok(unknownField instanceof InvalidArgument);
    assert.match(unknownField.message, /unknown field `colour`/);

    const badId = await refusal(hs.get("nonsense"));
    assert.ok(badId instanceof InvalidArgument);
    assert.match(badId.message, /26-character ULID/);
  });

  test("an unknown memory is NotFound", async () => {
    const id = "01M8YE12SMHKP96BBWHX8RHQSJ";
    for (const call of [() => hs.get(id), () => hs.trace(id), () => hs.forget(id)]) {
      const error = await refusal(call());
      assert.ok(error instanceof NotFound, String(error));
      assert.equal(error.code, "not_found");
      assert.equal(error.status, 404);
      assert.equal(error.message, `memory ${id} not found`);
      assert.equal(String(error), `NotFound: memory ${id} not found (HTTP 404, not_found)`);
    }
    assert.ok((await refusal(hs.getRecall("01M8YE12SMHKP96BBWHX8RHQSJ"))) instanceof NotFound);
  });

  test("a bank name is one percent-encoded path segment", async () => {
    // Unencoded, "a/b/memories" would be another route; the node would answer no route or 405.
    const bank = "ts/deep/er";
    const written = await hs.write(bank, "Nested names stay one segment");
    assert.equal((await hs.get(written.id)).memory.bank, bank);
    assert.equal((await hs.getBank(bank)).info.bank.name, bank);
  });
});
