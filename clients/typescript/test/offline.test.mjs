// What the client does without a node: error classes by code and status, the wait of a rate limit,
// path encoding, headers, timeouts and unreachable or wrong addresses (against a local stub).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";

import * as hindsight from "../dist/index.js";

const {
  Aborted, AlreadyExists, Cancelled, DataLoss, DeadlineExceeded, FailedPrecondition, HindsightClient,
  HindsightError, Internal, InvalidArgument, NotFound, OutOfRange, PayloadTooLarge, PermissionDenied,
  RateLimited, ROUTES, Unauthenticated, Unavailable, Unimplemented, UnsupportedMediaType, VERSION,
  errorFromResponse, pathOf,
} = hindsight;

describe("errors", () => {
  test("each code has the Python client's class", () => {
    const table = [
      ["invalid_argument", InvalidArgument],
      ["out_of_range", OutOfRange],
      ["unauthenticated", Unauthenticated],
      ["permission_denied", PermissionDenied],
      ["not_found", NotFound],
      ["already_exists", AlreadyExists],
      ["failed_precondition", FailedPrecondition],
      ["aborted", Aborted],
      ["payload_too_large", PayloadTooLarge],
      ["unsupported_media_type", UnsupportedMediaType],
      ["resource_exhausted", RateLimited],
      ["unavailable", Unavailable],
      ["cancelled", Cancelled],
      ["deadline_exceeded", DeadlineExceeded],
      ["unimplemented", Unimplemented],
      ["internal", Internal],
      ["data_loss", DataLoss],
    ];
    for (const [code, cls] of table) {
      const error = errorFromResponse(418, { code, message: `because ${code}` });
      assert.equal(error.constructor, cls, code);
      assert.ok(error instanceof HindsightError && error instanceof Error);
      assert.equal(error.code, code);
      assert.equal(cls.code, code);
      assert.equal(error.message, `because ${code}`);
      assert.equal(error.status, 418);
      assert.equal(error.name, cls.name);
    }
    assert.ok(errorFromResponse(400, { code: "out_of_range", message: "m" }) instanceof InvalidArgument);
    assert.ok(errorFromResponse(500, { code: "data_loss", message: "m" }) instanceof Internal);
  });

  test("without a readable body the status picks the class", () => {
    const cases = [
      [400, InvalidArgument], [401, Unauthenticated], [403, PermissionDenied], [404, NotFound],
      [409, FailedPrecondition], [413, PayloadTooLarge], [415, UnsupportedMediaType], [429, RateLimited],
      [500, Internal], [501, Unimplemented], [502, Unavailable], [503, Unavailable], [504, DeadlineExceeded],
    ];
    for (const [status, cls] of cases) {
      const error = errorFromResponse(status, undefined, "<html>Bad gateway</html>");
      assert.equal(error.constructor, cls, String(status));
      assert.equal(error.code, cls.code);
      assert.equal(error.message, "<html>Bad gateway</html>");
    }
    const odd = errorFromResponse(418, undefined, "");
    assert.equal(odd.constructor, HindsightError);
    assert.equal(odd.code, "http_418");
    assert.equal(odd.message, "HTTP 418");
    // An unknown code keeps the node's words and falls back on the status for the class.
    const future = errorFromResponse(404, { code: "gone_fishing", message: "later" });
    assert.ok(future instanceof NotFound);
    assert.equal(future.code, "gone_fishing");
  });

  test("a rate limit's wait comes from Retry-After, else from the message", () => {
    const body = { code: "resource_exhausted", message: "rate limit: retry in 1954 ms" };
    assert.equal(errorFromResponse(429, body, "", new Headers({ "Retry-After": "3" })).retryAfter, 3);
    assert.equal(errorFromResponse(429, body, "", { "retry-after": "0.5" }).retryAfter, 0.5);
    assert.equal(errorFromResponse(429, body).retryAfter, 1.954);
    assert.equal(errorFromResponse(429, { code: "resource_exhausted", message: "retry in 2 s" }).retryAfter, 2);
    const date = new Date(Date.now() + 10_000).toUTCString();
    const fromDate = errorFromResponse(429, body, "", { "Retry-After": date }).retryAfter;
    assert.ok(fromDate > 5 && fromDate <= 10, String(fromDate));
    assert.equal(errorFromResponse(429, { code: "resource_exhausted", message: "slow down" }).retryAfter, null);
  });

  test("toString names the class, status and code", () => {
    const error = errorFromResponse(404, { code: "not_found", message: "memory X not found" });
    assert.equal(String(error), "NotFound: memory X not found (HTTP 404, not_found)");
    assert.equal(String(new Unavailable("no answer")), "Unavailable: no answer (unavailable)");
  });
});

describe("paths", () => {
  test("bank names and ids are one percent-encoded segment", () => {
    assert.equal(pathOf(ROUTES.write, { bank: "acme/agent-7" }), "/v1/banks/acme%2Fagent-7/memories");
    assert.equal(pathOf(ROUTES.getBank, { bank: "a b?c#d" }), "/v1/banks/a%20b%3Fc%23d");
    assert.equal(pathOf(ROUTES.resolveConflict, { bank: "acme/x", id: 7 }), "/v1/banks/acme%2Fx/conflicts/7/resolve");
    assert.throws(() => pathOf(ROUTES.get, { id: "" }), TypeError);
    assert.throws(() => pathOf(ROUTES.get, {}), TypeError);
  });

  test("the version is package.json's", () => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    assert.equal(VERSION, pkg.version);
    assert.equal(pkg.name, "@hindsight/client");
  });
});

describe("against a stub", () => {
  let server;
  let url;
  const seen = [];
  let reply = (_req, res) => res.end("{}");

  before(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => (body += chunk));
      req.on("end", () => {
        seen.push({ method: req.method, url: req.url, headers: req.headers, body });
        reply(req, res);
      });
    });
    await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
    url = `http://127.0.0.1:${server.address().port}`;
  });

  after(async () => {
    server.closeAllConnections?.();
    await new Promise((ok) => server.close(ok));
  });

  test("requests carry the key, JSON and the percent-encoded path", async () => {
    seen.length = 0;
    reply = (_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ hits: [], time_window: null, tokens_used: 0, took_micros: 1, recall_id: "" }));
    };
    const client = new HindsightClient({ baseUrl: `${url}/`, apiKey: " hs_k_s ", headers: { "x-trace": "1" } });
    const answer = await client.recall("acme/agent-7", { query: "q", top_k: 3 });
    assert.deepEqual(answer.hits, []);
    const [request] = seen;
    assert.equal(request.method, "POST");
    assert.equal(request.url, "/v1/banks/acme%2Fagent-7/recall");
    assert.equal(request.headers.authorization, "Bearer hs_k_s");
    assert.equal(request.headers["content-type"], "application/json");
    assert.equal(request.headers["x-trace"], "1");
    assert.match(request.headers["user-agent"], /^hindsight-client-typescript\//);
    assert.deepEqual(JSON.parse(request.body), { query: "q", top_k: 3 });

    seen.length = 0;
    await client.recall(["a/1", "b/2"], "q");
    assert.equal(seen[0].url, "/v1/recall");
    assert.deepEqual(JSON.parse(seen[0].body), { query: "q", banks: ["a/1", "b/2"] });

    seen.length = 0;
    await client.listRecalls({ bank: "acme/agent-7", limit: 5, query_contains: undefined });
    await client.listConflicts("acme/x", { include_resolved: true });
    await client.get("01M8YE12SMHKP96BBWHX8RHQSJ");
    await new HindsightClient({ baseUrl: url, apiKey: "" }).status();
    assert.deepEqual(seen.map((r) => [r.method, r.url, r.body]), [
      ["GET", "/v1/recalls?bank=acme%2Fagent-7&limit=5", ""],
      ["GET", "/v1/banks/acme%2Fx/conflicts?include_resolved=true", ""],
      ["GET", "/v1/memories/01M8YE12SMHKP96BBWHX8RHQSJ", ""],
      ["GET", "/v1/status", ""],
    ]);
    assert.equal(seen[3].headers.authorization, undefined);
  });

  test("a batch names the bank in every item", async () => {
    seen.length = 0;
    reply = (_req, res) => res.end(JSON.stringify({ outcomes: [] }));
    await new HindsightClient(url).writeBatch("acme/x", ["one", { content: "two", tags: ["t"] }]);
    assert.deepEqual(JSON.parse(seen[0].body), {
      items: [{ bank: "acme/x", content: "one" }, { content: "two", tags: ["t"], bank: "acme/x" }],
    });
  });

  test("an error answer keeps its status, code, message and Retry-After", async () => {
    reply = (_req, res) => {
      res.statusCode = 429;
      res.setHeader("retry-after", "2");
      res.end(JSON.stringify({ code: "resource_exhausted", message: "over the key's rate" }));
    };
    const error = await new HindsightClient(url).status().then(() => assert.fail("answered"), (e) => e);
    assert.ok(error instanceof RateLimited, String(error));
    assert.equal(error.retryAfter, 2);
    assert.equal(error.status, 429);
    assert.equal(error.message, "over the key's rate");
  });

  test("a 200 that is not JSON is a bad response", async () => {
    reply = (_req, res) => res.end("<html>a web server</html>");
    const error = await new HindsightClient(url).status().then(() => assert.fail("answered"), (e) => e);
    assert.equal(error.constructor, HindsightError);
    assert.equal(error.code, "bad_response");
    assert.equal(error.status, 200);
  });

  test("no answer in time is DeadlineExceeded", async () => {
    reply = () => {}; // never answers
    const started = Date.now();
    const error = await new HindsightClient({ baseUrl: url, timeoutMs: 200 }).status().then(() => assert.fail("answered"), (e) => e);
    assert.ok(error instanceof DeadlineExceeded, String(error));
    assert.equal(error.status, null);
    assert.ok(Date.now() - started < 5000);
    assert.equal(await new HindsightClient({ baseUrl: url, timeoutMs: 200 }).ready(), false);
  });
});

test("an address nothing listens on is Unavailable, and not ready", async () => {
  // A port just given back: nothing listens there any more.
  const server = createServer();
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const port = server.address().port;
  await new Promise((ok) => server.close(ok));
  const client = new HindsightClient({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 5000 });
  const error = await client.status().then(() => assert.fail("answered"), (e) => e);
  assert.ok(error instanceof Unavailable, String(error));
  assert.equal(error.status, null);
  assert.match(error.message, /ECONNREFUSED/);
  assert.equal(await client.ready(), false);
});
