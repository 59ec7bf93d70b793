/**
 * The messages of `proto/hindsight/v1/` as the HTTP API reads and writes them: proto field names
 * (snake_case), 64-bit integers as numbers, times as RFC 3339 strings, maps as objects.
 *
 * Each interface carries the name of its schema in the node's `/openapi.json`, and
 * `test/openapi.test.mjs` compares their fields, so a name here that the node does not know (it
 * refuses unknown request fields) fails the tests rather than a caller's request.
 *
 * Answers: the node sends every field, `null` for an absent optional value. Message fields the
 * node always fills (a hit's `memory`, a memory's `status`) are typed without `null`.
 * Requests: every field may be left out; proto3 defaults apply.
 */

/** An RFC 3339 time, e.g. `2026-12-03T16:41:02.843Z`. */
export type Timestamp = string;

// -------------------------------------------------------------------------------------------------
// Memories

export interface Provenance {
  /** "user", "tool", "agent", "reflection" or "import". On a write, unset means "agent". */
  source: string;
  /** The tool that returned it, for source "tool". */
  tool: string | null;
  agent_id: string | null;
  session_id: string | null;
  task_id: string | null;
  tool_call_id: string | null;
}

/** What a write may say about where it came from; unset fields stay unset. */
export type ProvenanceInput = { [K in keyof Provenance]?: Provenance[K] | null };

export interface Slot {
  subject: string;
  attribute: string;
  value: string;
}

export interface MemoryStatus {
  /** "active", "superseded", "falsified", "disputed", "pending_review", "quarantined", "archived" … */
  name: string;
  /** For "superseded": the memory that replaced this one. */
  superseded_by: string | null;
  /** For "quarantined": why the guard held it back. */
  quarantine_reason: string | null;
}

export interface StatusChange {
  effective_at: Timestamp;
  status: MemoryStatus;
  /** The confidence in force from this change on. */
  confidence: number | null;
}

export interface Support {
  /** How many writes stated it. */
  count: number;
  /** Near-duplicates merged into it. */
  merged: string[];
  /** Records it was derived from (the episodes behind a distilled rule). */
  derived_from: string[];
}

export interface AccessStats {
  count: number;
  last_accessed_at: Timestamp | null;
}

export interface Signature {
  key_id: string;
  mac: string;
}

export interface Memory {
  id: string;
  bank: string;
  /** "working", "episodic" or "semantic". */
  kind: string;
  /** For semantic memories: "fact", "preference", "procedure", "lesson" or "rule". */
  subtype: string | null;
  content: string;
  entities: string[];
  slot: Slot | null;
  provenance: Provenance;
  /** Event time, as the writer gave it. */
  occurred_at: Timestamp;
  /** When the service stored it. */
  recorded_at: Timestamp;
  valid_from: Timestamp;
  /** Set once the memory stops holding (superseded, falsified). */
  valid_to: Timestamp | null;
  expires_at: Timestamp | null;
  confidence: number;
  importance: number;
  /** Exempt from decay. */
  critical: boolean;
  status: MemoryStatus;
  /** Every status the record has had, oldest first. */
  status_log: StatusChange[];
  support: Support;
  access: AccessStats;
  tags: string[];
  metadata: Record<string, string>;
  signature: Signature | null;
  /** Bumped by every applied change. */
  version: number;
  updated_at: Timestamp;
  /** Raft log index of the last change to the record. */
  updated_index: number;
}

export interface WriteRequest {
  /** Taken from the path when left out; if given it must be the same. */
  bank?: string;
  content?: string;
  /** Unset means "semantic". */
  kind?: string | null;
  subtype?: string | null;
  provenance?: ProvenanceInput | null;
  /** Event time; unset means now. */
  occurred_at?: Timestamp | null;
  /** The memory expires this long after occurred_at. */
  ttl_seconds?: number | null;
  /** Unset means the source's initial confidence. */
  confidence?: number | null;
  importance?: number | null;
  critical?: boolean;
  tags?: string[];
  metadata?: Record<string, string>;
}

export interface ImportanceScores {
  total: number;
  impact: number;
  reuse: number;
  stability: number;
  uniqueness: number;
}

export interface WriteResponse {
  /** The memory that holds the write: the new one, or for "merged" the existing one. */
  id: string;
  /** "created", "merged", "quarantined" or "rejected_low_importance" (nothing stored). */
  disposition: string;
  /** For "merged": the existing memory the write was folded into. */
  merged_into: string | null;
  similarity: number | null;
  /** For "quarantined": why. */
  quarantine_reason: string | null;
  /** For "rejected_low_importance": the scores that fell short of the threshold. */
  importance: ImportanceScores | null;
}

export interface WriteBatchRequest {
  items?: WriteRequest[];
}

export interface WriteBatchResponse {
  /** One per item, in request order. */
  outcomes: WriteResponse[];
}

/** Query of `GET /v1/banks/{bank}/memories`. */
export interface ListMemoriesQuery {
  /** Only memories with this status; every status when unset. */
  status?: string;
  /** The `next` of the previous page; unset for the first. */
  after?: string;
  /** Records examined per page (1..=1000, default 100). */
  limit?: number;
}

export interface ListMemoriesResponse {
  memories: Memory[];
  next: string | null;
}

/** Query of `GET /v1/memories/{id}`. */
export interface GetQuery {
  /** "linearizable" (read-your-writes) or "eventual". */
  consistency?: string;
}

export interface GetResponse {
  memory: Memory;
}

export interface FieldChange {
  field: string;
  old: string;
  new: string;
}

export interface HistoryEntry {
  memory: string;
  /** "created", "merged", "status_changed", "updated", "expired" or "archived". */
  kind: string;
  /** "write", "forget", "review", "api" … */
  actor: string;
  reason: string;
  effective_at: Timestamp;
  recorded_at: Timestamp;
  log_index: number;
  /** The record's version after this change. */
  version: number;
  changes: FieldChange[];
}

export interface TraceResponse {
  memory: Memory;
  /** Oldest first. */
  history: HistoryEntry[];
  /** Records this one links to (what superseded it, what it was derived from) that still exist. */
  related: Memory[];
  /** "verified (key K)", "unsigned", or "FAILED: why". */
  integrity: string;
}

export interface ForgetRequest {
  /** Taken from the path when left out. */
  id?: string;
  /** Delete instead of archive, cascading to everything derived from the record. */
  hard?: boolean;
  /** Kept in the record's history; unset gives a generic reason. */
  reason?: string | null;
}

/** Query of `DELETE /v1/memories/{id}`. */
export interface ForgetQuery {
  hard?: boolean;
  reason?: string;
}

export interface ForgetResponse {
  /** Every id that changed. */
  changed: string[];
}

export interface ReleaseQuarantineRequest {
  /** Taken from the path when left out. */
  id?: string;
  /** Why the memory is safe after all; required, and kept in its history. */
  reason?: string;
}

export interface ReleaseQuarantineResponse {
  memory: Memory;
}

// -------------------------------------------------------------------------------------------------
// Recall

export interface RecallFilters {
  /** Only these kinds (all when empty). */
  kinds?: string[];
  /** Only memories carrying every one of these tags. */
  tags?: string[];
  /** Only memories whose occurred_at lies in [occurred_from, occurred_to). */
  occurred_from?: Timestamp | null;
  occurred_to?: Timestamp | null;
  /** Overrides the banks' minimum confidence. */
  min_confidence?: number | null;
}

export interface RecallRequest {
  /** For `POST /v1/recall`; on a bank's route empty or that bank. */
  banks?: string[];
  query?: string;
  /** Unset means 10; 0 or more than the node's limit is refused. */
  top_k?: number | null;
  /** Stop adding results once their contents reach this many tokens. */
  max_tokens?: number | null;
  /** Point in time for relative time expressions, freshness, expiry and statuses. */
  as_of?: Timestamp | null;
  filters?: RecallFilters | null;
  /** Also return superseded, falsified, expired and archived memories. */
  include_history?: boolean;
  /** Also return archived memories whatever their confidence; each one returned is restored. */
  include_archived?: boolean;
  /** "linearizable" (read-your-writes, the default) or "eventual". */
  consistency?: string | null;
  /** Who is asking ("support agent"). */
  agent_role?: string | null;
  /** "facts", "how_to", "past_cases", "preferences" or "any". */
  intent?: string | null;
  /** The case at hand (user_id, order_id …): matching metadata counts more, a different value excludes. */
  context?: Record<string, string>;
}

export interface ArmHit {
  /** "semantic", "keyword", "graph" or "temporal". */
  arm: string;
  /** 1-based rank within the arm. */
  rank: number;
  score: number;
}

export interface Explain {
  arms: ArmHit[];
  relevance: number;
  confidence: number;
  freshness: number;
  score: number;
  status: string;
  /** e.g. "disputed", "requires_confirmation", "uncorroborated", "support:2". */
  flags: string[];
  /** Ids of near-identical results folded into this one. */
  collapsed: string[];
  /** How intent, role and context changed the score. */
  adjustments: string[];
}

export interface RecallHit {
  /** The record as it is now. */
  memory: Memory;
  /** The memory's status as of the request's as_of. */
  status: MemoryStatus;
  score: number;
  explain: Explain;
}

export interface TimeWindow {
  from: Timestamp;
  to: Timestamp;
}

export interface RecallResponse {
  /** Best first. */
  hits: RecallHit[];
  /** Present when the query held a time expression. */
  time_window: TimeWindow | null;
  tokens_used: number;
  took_micros: number;
  /** The recall's entry in the retrieval log, for feedback; empty when the log is off. */
  recall_id: string;
}

/** The one recall result shape of docs/RECALL-RESULT.md. */
export type RecallResult = RecallResponse;

// -------------------------------------------------------------------------------------------------
// Feedback and the retrieval log

export interface FeedbackRequest {
  recall_id?: string;
  memory_id?: string;
  /** "used", "helpful", "wrong" or "harmful". */
  outcome?: string;
}

export interface FeedbackResponse {
  /** The memory after the feedback. */
  memory: Memory;
  confidence_before: number;
  confidence_after: number;
  /** False when the same feedback on this recall and memory was given before: nothing changed. */
  applied: boolean;
}

/** Query of `GET /v1/recalls`. */
export interface ListRecallsQuery {
  /** Only recalls over this bank. */
  bank?: string;
  /** Only recalls whose query contains this text (any case). */
  query_contains?: string;
  /** Only recalls made in [since, until). */
  since?: Timestamp;
  until?: Timestamp;
  /** Unset means 50. */
  limit?: number;
}

export interface LoggedHit {
  memory_id: string;
  bank: string;
  rank: number;
  score: number;
  /** The content as it was returned. */
  content: string;
  explain: Explain;
}

export interface FeedbackEvent {
  at: Timestamp;
  memory_id: string;
  outcome: string;
  principal: string;
  confidence_before: number;
  confidence_after: number;
}

export interface LoggedRecall {
  id: string;
  at: Timestamp;
  principal: string;
  request: RecallRequest;
  hits: LoggedHit[];
  latency_micros: number;
  feedback: FeedbackEvent[];
}

export interface ListRecallsResponse {
  /** Newest first. */
  recalls: LoggedRecall[];
}

// -------------------------------------------------------------------------------------------------
// Review, conflicts, reflection

export interface ReviewRequest {
  /** Taken from the path when left out. */
  bank?: string;
  /** Event time the review runs as of; unset means now. */
  as_of?: Timestamp | null;
}

export interface ReviewCycle {
  cycle: number;
  as_of: Timestamp;
  started_at: Timestamp;
  took_micros: number;
  /** Memories changed since the previous cycle. */
  changed: number;
  pairs_considered: number;
  all_pairs: number;
  pairs_judged: number;
  pairs_deferred: number;
  tokens_used: number;
  token_budget: number;
  judge: string;
  /** Decisions by kind: supersede, falsify, dispute, pending_review, merge, decay, archive. */
  decisions: Record<string, number>;
  expired: number;
}

export interface ReviewResponse {
  bank: string;
  as_of: Timestamp;
  /** Memories the review looked at. */
  considered: number;
  expired: string[];
  took_micros: number;
  /** Memories the cycle's decisions changed. */
  updated: string[];
  /** Conflict-queue entries the cycle opened. */
  conflicts_opened: number[];
  cycle: ReviewCycle;
  /** Rules the cycle distilled from repeated episodes. */
  created: string[];
  /** Archived memories past their retention, deleted for good. */
  purged: string[];
  /** Changed memories left for the next cycles. */
  backlog: number;
}

/** Query of `GET /v1/banks/{bank}/conflicts`. */
export interface ConflictsQuery {
  include_resolved?: boolean;
}

export interface Conflict {
  id: number;
  bank: string;
  a: string;
  b: string;
  judge: string;
  explanation: string;
  opened_at: Timestamp;
  /** Unset while open; keep_a, keep_b, keep_both or discard_both once resolved. */
  outcome: string | null;
  resolved_at: Timestamp | null;
  note: string;
}

export interface ListConflictsResponse {
  conflicts: Conflict[];
}

export interface ResolveConflictRequest {
  /** Taken from the path when left out. */
  bank?: string;
  /** Taken from the path when left out. */
  id?: number;
  /** keep_a, keep_b, keep_both or discard_both. */
  outcome?: string;
  note?: string;
}

export interface ResolveConflictResponse {
  conflict: Conflict;
  /** Memories whose status or confidence changed. */
  changed: string[];
}

export interface ToolCall {
  tool?: string;
  arguments?: string;
  result?: string | null;
  error?: string | null;
}

export interface ReflectRequest {
  /** Taken from the path when left out. */
  bank?: string;
  /** What the task was for. */
  goal?: string;
  /** The agent's steps, in order. */
  steps?: string[];
  tool_calls?: ToolCall[];
  /** "succeeded", "failed" or "partial". */
  outcome?: string;
  /** What the user said about the result, in their own words. */
  feedback?: string | null;
  /** "en" or "zh"; unset: detected from the goal. */
  lang?: string | null;
  /** Recorded in each memory's provenance. */
  task_id?: string | null;
  /** Say what would be kept without writing anything. */
  dry_run?: boolean;
}

export interface Reflection {
  content: string;
  kind: string;
  subtype: string | null;
  tags: string[];
  /** Which part of the trace it came from. */
  why: string;
  /** How it was stored; unset on a dry run. */
  written: WriteResponse | null;
}

export interface ReflectResponse {
  memories: Reflection[];
  /** "rules" or "llm:<model>". */
  reflector: string;
  tokens_used: number;
}

// -------------------------------------------------------------------------------------------------
// Banks

export interface ScoringWeights {
  relevance: number;
  confidence: number;
  freshness: number;
  freshness_days: number;
  /** 0 (unset) means the default, 365 days. */
  fact_freshness_days: number;
}

export interface ReviewStrategies {
  /** falsify | supersede | pending_review | ignore */
  inference: string;
  /** supersede | pending_review | ignore */
  temporal: string;
  /** keep_both | pending_review | ignore */
  source: string;
  /** merge | ignore */
  duplicate: string;
  /** pending_review | ignore */
  undecidable: string;
  supersede_boost: number;
  superseded_confidence: number;
  dispute_factor: number;
  pending_review_factor: number;
}

export interface Bank {
  name: string;
  description: string;
  /** Recall hides memories below this confidence unless asked otherwise. */
  min_confidence: number;
  /** Similarity at or above which a write merges into an existing memory. */
  dedup_threshold: number;
  /** Default time to live of working memories. */
  working_ttl_seconds: number;
  /** Recall collapses results at least this similar. */
  collapse_threshold: number;
  weights: ScoringWeights | null;
  /** Live memories the bank may hold before review archives the least useful; 0: no quota. */
  max_memories: number;
  /** Content bytes the bank may hold in live and quarantined memories; 0: no quota. */
  max_bytes: number;
  /** Recall leaves out memories from low-trust sources that nothing corroborates. */
  require_corroboration: boolean;
  /** The bank's own conflict strategies; unset follows the node's. */
  strategies: ReviewStrategies | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Bank settings to set; those left out keep their value (or the node's default on create). */
export interface BankPatch {
  description?: string | null;
  min_confidence?: number | null;
  dedup_threshold?: number | null;
  working_ttl_seconds?: number | null;
  collapse_threshold?: number | null;
  /** Replaces all the weights at once. */
  weights?: Partial<ScoringWeights> | null;
  max_memories?: number | null;
  max_bytes?: number | null;
  require_corroboration?: boolean | null;
  /** Replaces the bank's strategies as a whole. */
  strategies?: Partial<ReviewStrategies> | null;
}

export interface BankInfo {
  bank: Bank;
  /** Records in the bank, whatever their status. */
  memory_count: number;
}

export interface CreateBankRequest {
  name?: string;
  settings?: BankPatch | null;
}

export interface CreateBankResponse {
  bank: Bank;
}

export interface GetBankResponse {
  info: BankInfo;
}

export interface ListBanksResponse {
  banks: BankInfo[];
}

export interface UpdateBankRequest {
  /** Taken from the path when left out. */
  name?: string;
  patch?: BankPatch | null;
}

export interface UpdateBankResponse {
  bank: Bank;
}

export interface DeleteBankResponse {
  /** Memories removed with the bank. */
  memories_removed: number;
}

/** Query of `GET /v1/banks/{bank}/export`. */
export interface ExportBankQuery {
  after?: string;
  limit?: number;
}

export interface ExportBankResponse {
  /** One JSON record per line, for `importBank`. */
  lines: string[];
  /** Where the next page starts; unset on the last page. */
  next: string | null;
}

export interface ImportBankRequest {
  /** The bank the lines go into; taken from the path when left out. */
  name?: string;
  lines?: string[];
  /** Sign records whose signature does not verify on this node. */
  resign?: boolean;
}

export interface ImportBankResponse {
  memories: number;
  conflicts: number;
}

// -------------------------------------------------------------------------------------------------
// API keys and the node

export interface ApiKeyInfo {
  id: string;
  principal: string;
  grants: string[];
  created_at: Timestamp;
  revoked_at: Timestamp | null;
}

export interface CreateApiKeyRequest {
  principal?: string;
  /** PATTERN=RIGHT: a bank name or pattern ("acme/team-*", "acme/**", "**") and read, write or admin. */
  grants?: string[];
}

export interface CreateApiKeyResponse {
  info: ApiKeyInfo;
  /** hs_<id>_<secret>, shown once: the node keeps only its hash. */
  key: string;
}

export interface ListApiKeysResponse {
  keys: ApiKeyInfo[];
}

export interface StatusResponse {
  node_id: number;
  leader_id: number | null;
  term: number;
  last_log_index: number;
  applied_index: number;
  banks_loaded: number;
  embedding_model: string;
  store_bytes_on_disk: number;
  /** True once the node serves requests. */
  ready: boolean;
  /** The server's release. */
  version: string;
}

export interface ClusterMember {
  node_id: number;
  /** The gRPC address peers reach it at. */
  address: string;
  /** A voter counts towards the quorum; a learner only receives the log. */
  voter: boolean;
  /** Log entries behind the leader; set only in the leader's answer. */
  lag: number | null;
  /**
   * Whether it answered the leader's Raft calls lately; set in the leader's answer (and true for
   * the answering node itself), `null` in a follower's, which cannot tell.
   */
  reachable: boolean | null;
  /** Milliseconds since it last answered the leader; set only in the leader's answer. */
  millis_since_ack: number | null;
}

export interface PartitionStatus {
  partition: number;
  /** The nodes the placement table puts it on, the preferred leader first. */
  replicas: number[];
  /** Whether this node holds a replica of it now. */
  hosted: boolean;
  leader_id: number | null;
  voters: number[];
  applied_index: number | null;
}

export interface ClusterStatusResponse {
  node_id: number;
  /** Leader, Follower, Candidate or Learner. */
  state: string;
  term: number;
  leader_id: number | null;
  members: ClusterMember[];
  last_log_index: number | null;
  applied_index: number | null;
  /** Known on the leader only. */
  committed_index: number | null;
  /** On the leader: milliseconds since a majority of voters last acknowledged it. */
  millis_since_quorum_ack: number | null;
  /** Members whose actor systems this node holds a session with. */
  linked_nodes: number[];
  link_hints_sent: number;
  link_hints_received: number;
  /** With cluster.partitions set: every partition, as the table places it and this node sees it. */
  partitions: PartitionStatus[];
  /** With cluster.partitions set: the placement table's version. */
  placement_version: number | null;
}

/** The body of every error answer. */
export interface ErrorBody {
  /** The gRPC status name in snake case (`invalid_argument`, `not_found` …). */
  code: string;
  message: string;
}
