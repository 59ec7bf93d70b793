/**
 * Every route the client calls, in one table: the client builds its requests from it and
 * `test/openapi.test.mjs` holds it against a live node's `/openapi.json`, so that a path, method,
 * query parameter or body schema the node does not have fails the tests.
 */

export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE";

export interface Route {
  readonly method: HttpMethod;
  /** The path template, with `{name}` for each path parameter, as the OpenAPI document spells it. */
  readonly path: string;
  /** The operationId in the OpenAPI document. */
  readonly operation: string;
  /** The schema (and interface in types.ts) of the JSON body the client sends. */
  readonly body?: string;
  /** The interface in types.ts whose fields are the query parameters the client may send. */
  readonly query?: string;
  /** The schema (and interface in types.ts) of the 200 answer. */
  readonly answer?: string;
  /** False for routes outside `/v1`, which the document does not describe. */
  readonly documented: boolean;
}

export const ROUTES = {
  write: {
    method: "POST", path: "/v1/banks/{bank}/memories", operation: "write",
    body: "WriteRequest", answer: "WriteResponse", documented: true,
  },
  listMemories: {
    method: "GET", path: "/v1/banks/{bank}/memories", operation: "listMemories",
    query: "ListMemoriesQuery", answer: "ListMemoriesResponse", documented: true,
  },
  writeBatch: {
    method: "POST", path: "/v1/banks/{bank}/memories/batch", operation: "writeBatch",
    body: "WriteBatchRequest", answer: "WriteBatchResponse", documented: true,
  },
  recallBank: {
    method: "POST", path: "/v1/banks/{bank}/recall", operation: "recallBank",
    body: "RecallRequest", answer: "RecallResponse", documented: true,
  },
  recall: {
    method: "POST", path: "/v1/recall", operation: "recall",
    body: "RecallRequest", answer: "RecallResponse", documented: true,
  },
  get: {
    method: "GET", path: "/v1/memories/{id}", operation: "get",
    query: "GetQuery", answer: "GetResponse", documented: true,
  },
  trace: {
    method: "GET", path: "/v1/memories/{id}/trace", operation: "trace",
    answer: "TraceResponse", documented: true,
  },
  forget: {
    method: "POST", path: "/v1/memories/{id}/forget", operation: "forgetWithBody",
    body: "ForgetRequest", answer: "ForgetResponse", documented: true,
  },
  releaseQuarantine: {
    method: "POST", path: "/v1/memories/{id}/release", operation: "releaseQuarantine",
    body: "ReleaseQuarantineRequest", answer: "ReleaseQuarantineResponse", documented: true,
  },
  review: {
    method: "POST", path: "/v1/banks/{bank}/review", operation: "review",
    body: "ReviewRequest", answer: "ReviewResponse", documented: true,
  },
  listConflicts: {
    method: "GET", path: "/v1/banks/{bank}/conflicts", operation: "listConflicts",
    query: "ConflictsQuery", answer: "ListConflictsResponse", documented: true,
  },
  resolveConflict: {
    method: "POST", path: "/v1/banks/{bank}/conflicts/{id}/resolve", operation: "resolveConflict",
    body: "ResolveConflictRequest", answer: "ResolveConflictResponse", documented: true,
  },
  reflect: {
    method: "POST", path: "/v1/banks/{bank}/reflect", operation: "reflect",
    body: "ReflectRequest", answer: "ReflectResponse", documented: true,
  },
  feedback: {
    method: "POST", path: "/v1/feedback", operation: "feedback",
    body: "FeedbackRequest", answer: "FeedbackResponse", documented: true,
  },
  listRecalls: {
    method: "GET", path: "/v1/recalls", operation: "listRecalls",
    query: "ListRecallsQuery", answer: "ListRecallsResponse", documented: true,
  },
  getRecall: {
    method: "GET", path: "/v1/recalls/{recall_id}", operation: "getRecall",
    answer: "LoggedRecall", documented: true,
  },
  listBanks: {
    method: "GET", path: "/v1/banks", operation: "listBanks",
    answer: "ListBanksResponse", documented: true,
  },
  createBank: {
    method: "POST", path: "/v1/banks", operation: "createBank",
    body: "CreateBankRequest", answer: "CreateBankResponse", documented: true,
  },
  getBank: {
    method: "GET", path: "/v1/banks/{bank}", operation: "getBank",
    answer: "GetBankResponse", documented: true,
  },
  updateBank: {
    method: "PATCH", path: "/v1/banks/{bank}", operation: "updateBank",
    body: "UpdateBankRequest", answer: "UpdateBankResponse", documented: true,
  },
  deleteBank: {
    method: "DELETE", path: "/v1/banks/{bank}", operation: "deleteBank",
    answer: "DeleteBankResponse", documented: true,
  },
  exportBank: {
    method: "GET", path: "/v1/banks/{bank}/export", operation: "exportBank",
    query: "ExportBankQuery", answer: "ExportBankResponse", documented: true,
  },
  importBank: {
    method: "POST", path: "/v1/banks/{bank}/import", operation: "importBank",
    body: "ImportBankRequest", answer: "ImportBankResponse", documented: true,
  },
  listApiKeys: {
    method: "GET", path: "/v1/keys", operation: "listApiKeys",
    answer: "ListApiKeysResponse", documented: true,
  },
  createApiKey: {
    method: "POST", path: "/v1/keys", operation: "createApiKey",
    body: "CreateApiKeyRequest", answer: "CreateApiKeyResponse", documented: true,
  },
  revokeApiKey: {
    method: "DELETE", path: "/v1/keys/{id}", operation: "revokeApiKey",
    answer: "ApiKeyInfo", documented: true,
  },
  status: {
    method: "GET", path: "/v1/status", operation: "status",
    answer: "StatusResponse", documented: true,
  },
  clusterStatus: {
    method: "GET", path: "/v1/cluster", operation: "clusterStatus",
    answer: "ClusterStatusResponse", documented: true,
  },
  ready: { method: "GET", path: "/ready", operation: "ready", documented: false },
} as const satisfies Record<string, Route>;

export type RouteName = keyof typeof ROUTES;

/** Path parameter values by name; bank names such as `acme/agent-7` stay one segment. */
export type PathParams = Readonly<Record<string, string | number>>;

/** The route's path with its parameters filled in, each percent-encoded as one segment. */
export function pathOf(route: Route, params: PathParams = {}): string {
  return route.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
    if (typeof value !== "string" || value === "") {
      throw new TypeError(
        `${route.method} ${route.path}: ${name} must be a non-empty string, got ${JSON.stringify(value)}`,
      );
    }
    return encodeURIComponent(value);
  });
}
