// The client's routes and types against the live node's /openapi.json, and proof that the check
// catches the differences it is there for.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ROUTES } from "../dist/index.js";
import { checkClient, fetchDocument, readInterfaces } from "./openapi-check.mjs";
import { Node } from "./node.mjs";

let node;
let document;

before(async () => {
  node = await Node.start();
  document = await fetchDocument(node.url);
});

after(async () => {
  await node?.stop();
});

const copy = () => structuredClone(document);

describe("the client against the node's OpenAPI document", () => {
  test("every route, parameter, body and field agrees", () => {
    assert.equal(document.openapi.startsWith("3.1"), true);
    assert.deepEqual(checkClient(document), []);
  });

  test("the client covers the common routes", () => {
    const used = new Set(Object.values(ROUTES).map((r) => `${r.method} ${r.path}`));
    for (const route of [
      "POST /v1/banks/{bank}/memories",
      "POST /v1/banks/{bank}/memories/batch",
      "POST /v1/banks/{bank}/recall",
      "POST /v1/recall",
      "GET /v1/memories/{id}",
      "GET /v1/memories/{id}/trace",
      "POST /v1/memories/{id}/forget",
      "POST /v1/banks/{bank}/review",
      "GET /v1/banks/{bank}/conflicts",
      "POST /v1/banks/{bank}/conflicts/{id}/resolve",
      "POST /v1/feedback",
      "GET /v1/recalls",
      "GET /v1/recalls/{recall_id}",
      "POST /v1/banks/{bank}/reflect",
      "POST /v1/banks",
      "GET /v1/banks",
      "GET /v1/banks/{bank}",
      "PATCH /v1/banks/{bank}",
      "DELETE /v1/banks/{bank}",
      "GET /v1/status",
    ]) {
      assert.ok(used.has(route), `${route} is not in ROUTES`);
    }
    assert.ok(readInterfaces().size >= 60);
  });

  test("a path missing from the document is reported", () => {
    const changed = copy();
    delete changed.paths["/v1/banks/{bank}/review"];
    assert.deepEqual(checkClient(changed), ["POST /v1/banks/{bank}/review (review): not in the document"]);
  });

  test("a method the path does not take is reported", () => {
    const changed = copy();
    changed.paths["/v1/feedback"] = { put: changed.paths["/v1/feedback"].post };
    assert.deepEqual(checkClient(changed), ["POST /v1/feedback (feedback): not in the document (the path takes PUT)"]);
  });

  test("a required request field the client's type lacks is reported", () => {
    const changed = copy();
    changed.components.schemas.WriteRequest.properties.namespace = { type: "string" };
    changed.components.schemas.WriteRequest.required = ["namespace"];
    assert.deepEqual(checkClient(changed), ["WriteRequest.namespace: a field of the document missing from the client's WriteRequest"]);
  });

  test("a required request field the client leaves optional is reported", () => {
    const changed = copy();
    changed.components.schemas.FeedbackRequest.required = ["recall_id"];
    assert.deepEqual(checkClient(changed), ["FeedbackRequest.recall_id: required by the document, optional in the client's FeedbackRequest"]);
  });

  test("a field the document no longer has is reported, in requests and answers", () => {
    const changed = copy();
    delete changed.components.schemas.RecallFilters.properties.tags;
    delete changed.components.schemas.Explain.properties.arms;
    assert.deepEqual(checkClient(changed).sort(), [
      "Explain.arms: not a field of the document's Explain",
      "RecallFilters.tags: not a field of the document's RecallFilters",
    ]);
  });

  test("query parameters and bodies that differ are reported", () => {
    const changed = copy();
    const recalls = changed.paths["/v1/recalls"].get;
    recalls.parameters = recalls.parameters.filter((p) => p.name !== "query_contains");
    recalls.parameters.push({ in: "query", name: "principal", required: false, schema: { type: "string" } });
    changed.paths["/v1/memories/{id}/forget"].post.requestBody.content["application/json"].schema = {
      $ref: "#/components/schemas/ReleaseQuarantineRequest",
    };
    assert.deepEqual(checkClient(changed).sort(), [
      "GET /v1/recalls (listRecalls): query parameter query_contains (ListRecallsQuery) is not in the document",
      "GET /v1/recalls (listRecalls): the document's query parameter principal is missing from ListRecallsQuery",
      "POST /v1/memories/{id}/forget (forget): the document's body is ReleaseQuarantineRequest, the client's ForgetRequest",
    ]);
  });
});
