import { DeadlineExceeded, HindsightError, Unavailable, errorFromResponse } from "./errors.js";
import { ROUTES, pathOf, type PathParams, type Route } from "./routes.js";
import type {
  ApiKeyInfo,
  BankPatch,
  ClusterStatusResponse,
  ConflictsQuery,
  CreateApiKeyRequest,
  CreateApiKeyResponse,
  CreateBankResponse,
  DeleteBankResponse,
  ExportBankQuery,
  ExportBankResponse,
  FeedbackRequest,
  FeedbackResponse,
  ForgetRequest,
  ForgetResponse,
  GetBankResponse,
  GetQuery,
  GetResponse,
  ImportBankRequest,
  ImportBankResponse,
  ListApiKeysResponse,
  ListBanksResponse,
  ListConflictsResponse,
  ListMemoriesQuery,
  ListMemoriesResponse,
  ListRecallsQuery,
  ListRecallsResponse,
  LoggedRecall,
  RecallRequest,
  RecallResponse,
  ReflectRequest,
  ReflectResponse,
  ReleaseQuarantineResponse,
  ResolveConflictRequest,
  ResolveConflictResponse,
  ReviewRequest,
  ReviewResponse,
  StatusResponse,
  TraceResponse,
  UpdateBankResponse,
  WriteBatchResponse,
  WriteRequest,
  WriteResponse,
} from "./types.js";
import { VERSION } from "./version.js";

export const DEFAULT_BASE_URL = "http://127.0.0.1:7401";
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ClientOptions {
  /** The node's HTTP address; defaults to `$HINDSIGHT_URL`, else `http://127.0.0.1:7401`. */
  baseUrl?: string;
  /**
   * Sent as `Authorization: Bearer <key>`. Left out: `$HINDSIGHT_API_KEY`; `""` sends no key even
   * when the environment has one.
   */
  apiKey?: string;
  /** Per request, in milliseconds (default 30 000); past it the call fails with DeadlineExceeded. */
  timeoutMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** A `fetch` to use instead of the global one (a proxy agent, a test double). */
  fetch?: typeof globalThis.fetch;
}

type Query = Readonly<Record<string, string | number | boolean | null | undefined>>;

interface Call {
  route: Route;
  params?: PathParams;
  body?: unknown;
  query?: Query;
}

function env(name: string): string | undefined {
  // Guarded so that the client also loads where there is no `process` (browsers, workers).
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env?.[name];
}

function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // Node's fetch reports "fetch failed" and keeps the reason (ECONNREFUSED …) in `cause`.
  const cause = (error as { cause?: unknown }).cause;
  const why = cause instanceof Error ? `: ${cause.message}` : "";
  return `${error.name}: ${error.message}${why}`;
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
}

/**
 * A client for a Hindsight node's HTTP API. Every method answers the node's JSON as typed here
 * (proto field names, `null` for absent optional values) and fails with a `HindsightError`
 * subclass when the node refuses the request or cannot be reached.
 */
export class HindsightClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof globalThis.fetch;

  constructor(options: ClientOptions | string = {}) {
    const o: ClientOptions = typeof options === "string" ? { baseUrl: options } : options;
    this.baseUrl = (o.baseUrl ?? env("HINDSIGHT_URL") ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.timeoutMs = o.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const key = (o.apiKey ?? env("HINDSIGHT_API_KEY") ?? "").trim();
    this.#headers = { accept: "application/json", "user-agent": `hindsight-client-typescript/${VERSION}` };
    if (key) this.#headers["authorization"] = `Bearer ${key}`;
    Object.assign(this.#headers, o.headers ?? {});
    const f = o.fetch ?? globalThis.fetch;
    if (typeof f !== "function") {
      throw new TypeError("no global fetch: use Node.js 18 or newer, or pass options.fetch");
    }
    this.#fetch = f;
  }

  async #send<T>(call: Call): Promise<T> {
    const { route } = call;
    const url = new URL(this.baseUrl + pathOf(route, call.params));
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers = { ...this.#headers };
    let body: string | undefined;
    if (call.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(call.body);
    }
    const where = `${route.method} ${route.path}`;
    let response: Response;
    let text: string;
    try {
      const init: RequestInit = { method: route.method, headers, signal: AbortSignal.timeout(this.timeoutMs) };
      if (body !== undefined) init.body = body;
      response = await this.#fetch(url, init);
      text = await response.text();
    } catch (error) {
      if (isTimeout(error)) {
        throw new DeadlineExceeded(`${where}: no answer in ${this.timeoutMs} ms`, { cause: error });
      }
      throw new Unavailable(`${where}: ${describeFailure(error)}`, { cause: error });
    }
    let parsed: unknown;
    let isJson = false;
    if (text !== "") {
      try {
        parsed = JSON.parse(text);
        isJson = true;
      } catch {
        parsed = undefined;
      }
    }
    if (response.status >= 400) {
      throw errorFromResponse(response.status, parsed, text, response.headers);
    }
    if (text !== "" && !isJson) {
      throw new HindsightError(
        `${where} answered ${response.status} with a body that is not JSON; is ${url.host} a ` +
          "Hindsight node's HTTP address?",
        { code: "bad_response", status: response.status },
      );
    }
    return (isJson ? parsed : {}) as T;
  }

  // -- memories ---------------------------------------------------------------------------------

  /**
   * Stores one memory; answers once it is durable and searchable. A near-duplicate of an existing
   * memory merges into it (`disposition` "merged", `id` the surviving memory). A string is the
   * content alone.
   */
  write(bank: string, request: WriteRequest | string): Promise<WriteResponse> {
    const body = typeof request === "string" ? { content: request } : request;
    return this.#send({ route: ROUTES.write, params: { bank }, body });
  }

  /** Stores several memories, all or none; one outcome per item, in order. */
  writeBatch(bank: string, items: ReadonlyArray<WriteRequest | string>): Promise<WriteBatchResponse> {
    // Each item names the bank: a WriteRequest inside a batch has no path to take it from.
    const body = {
      items: items.map((item) =>
        typeof item === "string" ? { bank, content: item } : { ...item, bank: item.bank ?? bank },
      ),
    };
    return this.#send({ route: ROUTES.writeBatch, params: { bank }, body });
  }

  /** The bank's memories in id order, a page at a time, without recall's side effects. */
  listMemories(bank: string, query: ListMemoriesQuery = {}): Promise<ListMemoriesResponse> {
    return this.#send({ route: ROUTES.listMemories, params: { bank }, query: { ...query } });
  }

  /**
   * The memories that answer `request.query`, best first, each with its `explain`. `banks` is one
   * bank name or several (then each needs the read right).
   */
  recall(banks: string | readonly string[], request: RecallRequest | string): Promise<RecallResponse> {
    const body: RecallRequest = typeof request === "string" ? { query: request } : { ...request };
    if (typeof banks === "string") {
      return this.#send({ route: ROUTES.recallBank, params: { bank: banks }, body });
    }
    body.banks = [...banks];
    return this.#send({ route: ROUTES.recall, body });
  }

  /** One memory by id. */
  get(id: string, query: GetQuery = {}): Promise<GetResponse> {
    return this.#send({ route: ROUTES.get, params: { id }, query: { ...query } });
  }

  /** The memory with its history (oldest first), linked records and integrity check. */
  trace(id: string): Promise<TraceResponse> {
    return this.#send({ route: ROUTES.trace, params: { id } });
  }

  /** Archives the memory, or with `hard` deletes it and everything derived from it. */
  forget(id: string, request: Omit<ForgetRequest, "id"> = {}): Promise<ForgetResponse> {
    return this.#send({ route: ROUTES.forget, params: { id }, body: request });
  }

  /** Releases a quarantined memory (admin on its bank); the reason goes in its history. */
  releaseQuarantine(id: string, reason: string): Promise<ReleaseQuarantineResponse> {
    return this.#send({ route: ROUTES.releaseQuarantine, params: { id }, body: { reason } });
  }

  /** What became of a recalled memory: used, helpful, wrong or harmful. */
  feedback(request: FeedbackRequest): Promise<FeedbackResponse> {
    return this.#send({ route: ROUTES.feedback, body: request });
  }

  /** The node's retrieval log, newest first. */
  listRecalls(query: ListRecallsQuery = {}): Promise<ListRecallsResponse> {
    return this.#send({ route: ROUTES.listRecalls, query: { ...query } });
  }

  /** One recall of the retrieval log, with the feedback given on it. */
  getRecall(recallId: string): Promise<LoggedRecall> {
    return this.#send({ route: ROUTES.getRecall, params: { recall_id: recallId } });
  }

  // -- review, conflicts, reflection ------------------------------------------------------------

  /** Runs the bank's review now: expiry, conflicts, duplicates, decay. */
  review(bank: string, request: Omit<ReviewRequest, "bank"> = {}): Promise<ReviewResponse> {
    return this.#send({ route: ROUTES.review, params: { bank }, body: request });
  }

  /** Contradictions the review left for a person to settle. */
  listConflicts(bank: string, query: ConflictsQuery = {}): Promise<ListConflictsResponse> {
    return this.#send({ route: ROUTES.listConflicts, params: { bank }, query: { ...query } });
  }

  /** Settles a queued conflict: `outcome` keep_a, keep_b, keep_both or discard_both. */
  resolveConflict(
    bank: string,
    id: number,
    request: Omit<ResolveConflictRequest, "bank" | "id">,
  ): Promise<ResolveConflictResponse> {
    return this.#send({ route: ROUTES.resolveConflict, params: { bank, id }, body: request });
  }

  /** Turns a finished task's trace into at most a few memories (none if nothing is worth it). */
  reflect(bank: string, request: Omit<ReflectRequest, "bank">): Promise<ReflectResponse> {
    return this.#send({ route: ROUTES.reflect, params: { bank }, body: request });
  }

  // -- banks ------------------------------------------------------------------------------------

  listBanks(): Promise<ListBanksResponse> {
    return this.#send({ route: ROUTES.listBanks });
  }

  /** A new bank; settings left out take the node's defaults. */
  createBank(name: string, settings?: BankPatch): Promise<CreateBankResponse> {
    const body = settings === undefined ? { name } : { name, settings };
    return this.#send({ route: ROUTES.createBank, body });
  }

  getBank(name: string): Promise<GetBankResponse> {
    return this.#send({ route: ROUTES.getBank, params: { bank: name } });
  }

  /** Changes the settings given; `weights` and `strategies` are replaced whole. */
  updateBank(name: string, patch: BankPatch): Promise<UpdateBankResponse> {
    return this.#send({ route: ROUTES.updateBank, params: { bank: name }, body: { patch } });
  }

  /** Deletes the bank and its memories. */
  deleteBank(name: string): Promise<DeleteBankResponse> {
    return this.#send({ route: ROUTES.deleteBank, params: { bank: name } });
  }

  /** The bank as JSON lines, a page at a time, for `importBank`. */
  exportBank(bank: string, query: ExportBankQuery = {}): Promise<ExportBankResponse> {
    return this.#send({ route: ROUTES.exportBank, params: { bank }, query: { ...query } });
  }

  importBank(bank: string, request: Omit<ImportBankRequest, "name">): Promise<ImportBankResponse> {
    return this.#send({ route: ROUTES.importBank, params: { bank }, body: request });
  }

  // -- API keys (admin on every bank) -----------------------------------------------------------

  listApiKeys(): Promise<ListApiKeysResponse> {
    return this.#send({ route: ROUTES.listApiKeys });
  }

  /** A key for `principal` with grants such as `"acme/*=write"`; the key is shown only here. */
  createApiKey(request: CreateApiKeyRequest): Promise<CreateApiKeyResponse> {
    return this.#send({ route: ROUTES.createApiKey, body: request });
  }

  revokeApiKey(id: string): Promise<ApiKeyInfo> {
    return this.#send({ route: ROUTES.revokeApiKey, params: { id } });
  }

  // -- the node ---------------------------------------------------------------------------------

  status(): Promise<StatusResponse> {
    return this.#send({ route: ROUTES.status });
  }

  clusterStatus(): Promise<ClusterStatusResponse> {
    return this.#send({ route: ROUTES.clusterStatus });
  }

  /** Whether the node serves requests now (`GET /ready`, open without a key); never throws. */
  async ready(): Promise<boolean> {
    try {
      const response = await this.#fetch(this.baseUrl + ROUTES.ready.path, {
        headers: this.#headers,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      await response.body?.cancel();
      return response.status === 200;
    } catch {
      return false;
    }
  }
}
