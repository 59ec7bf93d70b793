// A node with `[auth] enabled`: no key and a wrong key are Unauthenticated, a key without the right
// is PermissionDenied; and a node with a rate limit answers RateLimited with the wait.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { HindsightClient, HindsightError, PermissionDenied, RateLimited, Unauthenticated } from "../dist/index.js";
import { Node, newAdminKey, newBank } from "./node.mjs";

async function refusal(promise) {
  try {
    const answer = await promise;
    assert.fail(`expected a refusal, got ${JSON.stringify(answer)}`);
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    return error;
  }
}

describe("a node with auth enabled", () => {
  const adminKey = newAdminKey();
  let node;
  let admin;

  before(async () => {
    node = await Node.start({ HINDSIGHT_AUTH_ENABLED: "true", HINDSIGHT_ADMIN_KEY: adminKey });
    admin = new HindsightClient({ baseUrl: node.url, apiKey: adminKey });
  });

  after(async () => {
    await node?.stop();
  });

  test("no key is Unauthenticated, and the probes stay open", async () => {
    const anonymous = new HindsightClient({ baseUrl: node.url, apiKey: "" });
    const bank = newBank();
    for (const call of [
      () => anonymous.write(bank, { content: "Anyone can write here?", provenance: { source: "user" } }),
      () => anonymous.recall(bank, "anything"),
      () => anonymous.status(),
    ]) {
      const error = await refusal(call());
      assert.ok(error instanceof Unauthenticated, String(error));
      assert.equal(error.status, 401);
      assert.equal(error.code, "unauthenticated");
    }
    assert.equal(await anonymous.ready(), true);
  });

  test("a wrong key is Unauthenticated", async () => {
    const stranger = new HindsightClient({ baseUrl: node.url, apiKey: "hs_nobody_0123456789abcdef0123" });
    const error = await refusal(stranger.recall(newBank(), "anything"));
    assert.ok(error instanceof Unauthenticated, String(error));
  });

  test("the admin key opens every bank", async () => {
    const bank = newBank();
    const written = await admin.write(bank, { content: "The admin key opens every bank.", provenance: { source: "user" } });
    assert.equal(written.disposition, "created");
    const result = await admin.recall(bank, "What does the admin key open?");
    assert.deepEqual(result.hits.map((h) => h.memory.id), [written.id]);
    assert.equal((await admin.status()).ready, true);
  });

  test("the key is read from HINDSIGHT_API_KEY when none is given", async () => {
    const saved = process.env.HINDSIGHT_API_KEY;
    process.env.HINDSIGHT_API_KEY = adminKey;
    try {
      assert.equal((await new HindsightClient({ baseUrl: node.url }).status()).ready, true);
      // An empty key sends none even when the environment has one.
      const error = await refusal(new HindsightClient({ baseUrl: node.url, apiKey: "" }).status());
      assert.ok(error instanceof Unauthenticated);
    } finally {
      if (saved === undefined) delete process.env.HINDSIGHT_API_KEY;
      else process.env.HINDSIGHT_API_KEY = saved;
    }
  });

  test("a key without the right is PermissionDenied", async () => {
    const bank = newBank();
    const fact = await admin.write(bank, { content: "Reader keys may only recall.", provenance: { source: "user" } });
    const created = await admin.createApiKey({ principal: "reader", grants: [`${bank}=read`] });
    assert.match(created.key, /^hs_/);
    assert.equal(created.info.principal, "reader");
    assert.deepEqual(created.info.grants, [`${bank}=read`]);
    assert.ok((await admin.listApiKeys()).keys.some((k) => k.id === created.info.id));

    const reader = new HindsightClient({ baseUrl: node.url, apiKey: created.key });
    const result = await reader.recall(bank, "What may reader keys do?");
    assert.deepEqual(result.hits.map((h) => h.memory.id), [fact.id]);

    const write = await refusal(reader.write(bank, { content: "Readers write too.", provenance: { source: "user" } }));
    assert.ok(write instanceof PermissionDenied, String(write));
    assert.equal(write.status, 403);
    assert.equal(write.code, "permission_denied");
    assert.ok(write.message.length > 0);
    const elsewhere = await refusal(reader.recall(`${bank}-elsewhere`, "anything"));
    assert.ok(elsewhere instanceof PermissionDenied, String(elsewhere));
    const keys = await refusal(reader.listApiKeys());
    assert.ok(keys instanceof PermissionDenied, String(keys));

    const revoked = await admin.revokeApiKey(created.info.id);
    assert.ok(revoked.revoked_at);
    const afterRevoke = await refusal(reader.recall(bank, "anything"));
    assert.ok(afterRevoke instanceof Unauthenticated, String(afterRevoke));
  });
});

describe("a node with a rate limit", () => {
  let node;

  before(async () => {
    node = await Node.start({ HINDSIGHT_RATE_LIMIT_PER_KEY_PER_SEC: "0.5", HINDSIGHT_RATE_LIMIT_BURST: "2" });
  });

  after(async () => {
    await node?.stop();
  });

  test("over the limit is RateLimited with the wait", async () => {
    const client = new HindsightClient({ baseUrl: node.url, apiKey: "" });
    let error;
    for (let i = 0; i < 5 && error === undefined; i++) {
      error = await client.status().then(() => undefined, (e) => e);
    }
    assert.ok(error instanceof RateLimited, String(error));
    assert.ok(error instanceof HindsightError);
    assert.equal(error.status, 429);
    assert.equal(error.code, "resource_exhausted");
    assert.ok(error.retryAfter !== null && error.retryAfter > 0 && error.retryAfter <= 2.5, `retryAfter ${error.retryAfter}`);
  });
});
