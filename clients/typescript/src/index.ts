/**
 * Typed client for the Hindsight memory service's HTTP/JSON API.
 *
 * ```ts
 * import { HindsightClient } from "@hindsight/client";
 *
 * const hs = new HindsightClient({ baseUrl: "http://127.0.0.1:7401" });
 * await hs.write("acme/agent-7", { content: "The user prefers answers in French.", provenance: { source: "user" } });
 * const { hits } = await hs.recall("acme/agent-7", { query: "Which language should I answer in?" });
 * ```
 */

export { HindsightClient, DEFAULT_BASE_URL, DEFAULT_TIMEOUT_MS, type ClientOptions } from "./client.js";
export * from "./errors.js";
export { ROUTES, pathOf, type Route, type RouteName, type HttpMethod, type PathParams } from "./routes.js";
export type * from "./types.js";
export { VERSION } from "./version.js";
