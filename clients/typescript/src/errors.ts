/**
 * One error class per error code of the HTTP API, with the names of the Python client's classes so
 * that code and docs read the same in both languages.
 */

export interface HindsightErrorOptions {
  /** The API's snake-case code; defaults to the class's own. */
  code?: string;
  /** The HTTP status; `null` when no answer arrived. */
  status?: number | null;
  /** The parsed error body, when there was one. */
  body?: unknown;
  cause?: unknown;
}

/**
 * A request the node refused, or one that never got an answer.
 *
 * `code` is the API's snake-case error code (`"not_found"`), `message` the node's reason and
 * `status` the HTTP status (`null` when no answer arrived).
 */
export class HindsightError extends Error {
  static readonly code: string = "unknown";

  readonly code: string;
  readonly status: number | null;
  readonly body: unknown;

  constructor(message: string, options: HindsightErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const cls = new.target as typeof HindsightError;
    this.name = cls.name;
    this.code = options.code ?? cls.code;
    this.status = options.status ?? null;
    this.body = options.body;
  }

  override toString(): string {
    const where = this.status !== null ? `HTTP ${this.status}, ` : "";
    return `${this.name}: ${this.message} (${where}${this.code})`;
  }
}

export class InvalidArgument extends HindsightError {
  static override readonly code: string = "invalid_argument";
}

export class OutOfRange extends InvalidArgument {
  static override readonly code: string = "out_of_range";
}

export class Unauthenticated extends HindsightError {
  static override readonly code: string = "unauthenticated";
}

export class PermissionDenied extends HindsightError {
  static override readonly code: string = "permission_denied";
}

export class NotFound extends HindsightError {
  static override readonly code: string = "not_found";
}

export class AlreadyExists extends HindsightError {
  static override readonly code: string = "already_exists";
}

export class FailedPrecondition extends HindsightError {
  static override readonly code: string = "failed_precondition";
}

/** A concurrent change got in the way; the request may succeed if sent again. */
export class Aborted extends HindsightError {
  static override readonly code: string = "aborted";
}

export class PayloadTooLarge extends HindsightError {
  static override readonly code: string = "payload_too_large";
}

export class UnsupportedMediaType extends HindsightError {
  static override readonly code: string = "unsupported_media_type";
}

export interface RateLimitedOptions extends HindsightErrorOptions {
  retryAfter?: number | null;
}

/** Over the key's request rate; `retryAfter` is the wait in seconds when the node said. */
export class RateLimited extends HindsightError {
  static override readonly code: string = "resource_exhausted";

  readonly retryAfter: number | null;

  constructor(message: string, options: RateLimitedOptions = {}) {
    super(message, options);
    this.retryAfter = options.retryAfter ?? null;
  }
}

/** The node cannot serve now (no leader, not ready) or could not be reached at all. */
export class Unavailable extends HindsightError {
  static override readonly code: string = "unavailable";
}

export class Cancelled extends HindsightError {
  static override readonly code: string = "cancelled";
}

/** No answer within the client's timeout; the request may still have been applied. */
export class DeadlineExceeded extends HindsightError {
  static override readonly code: string = "deadline_exceeded";
}

/** The node does not serve this route or method (an older version). */
export class Unimplemented extends HindsightError {
  static override readonly code: string = "unimplemented";
}

export class Internal extends HindsightError {
  static override readonly code: string = "internal";
}

/** A record failed its integrity check and was withheld. */
export class DataLoss extends Internal {
  static override readonly code: string = "data_loss";
}

type ErrorClass = typeof HindsightError;

const BY_CODE: ReadonlyMap<string, ErrorClass> = new Map(
  [
    InvalidArgument,
    OutOfRange,
    Unauthenticated,
    PermissionDenied,
    NotFound,
    AlreadyExists,
    FailedPrecondition,
    Aborted,
    PayloadTooLarge,
    UnsupportedMediaType,
    RateLimited,
    Unavailable,
    Cancelled,
    DeadlineExceeded,
    Unimplemented,
    Internal,
    DataLoss,
  ].map((cls) => [cls.code, cls] as const),
);

// For answers without a readable error body (a proxy's HTML page, an empty 502), so that the
// caller still gets the class its retry logic looks for.
const BY_STATUS: ReadonlyMap<number, ErrorClass> = new Map<number, ErrorClass>([
  [400, InvalidArgument],
  [401, Unauthenticated],
  [403, PermissionDenied],
  [404, NotFound],
  [409, FailedPrecondition],
  [413, PayloadTooLarge],
  [415, UnsupportedMediaType],
  [429, RateLimited],
  [500, Internal],
  [501, Unimplemented],
  [502, Unavailable],
  [503, Unavailable],
  [504, DeadlineExceeded],
]);

const RETRY_IN = /retry in (\d+(?:\.\d+)?) ?(ms|s)\b/;

type HeaderSource = Headers | Record<string, string | undefined> | undefined;

function header(headers: HeaderSource, name: string): string | null {
  if (headers === undefined) return null;
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name);
  for (const [key, value] of Object.entries(headers as Record<string, string | undefined>)) {
    if (key.toLowerCase() === name && value !== undefined) return value;
  }
  return null;
}

/** Seconds to wait, from a `Retry-After` header (seconds or an HTTP date) or the node's message. */
function retryAfterOf(headers: HeaderSource, message: string): number | null {
  const raw = header(headers, "retry-after")?.trim();
  if (raw) {
    if (/^\d+(\.\d+)?$/.test(raw)) return Number(raw);
    const at = Date.parse(raw);
    if (!Number.isNaN(at)) return Math.max(0, (at - Date.now()) / 1000);
  }
  // Without the header the node states the wait only in its message ("retry in 1954 ms").
  const said = RETRY_IN.exec(message);
  if (said?.[1] !== undefined) return Number(said[1]) / (said[2] === "ms" ? 1000 : 1);
  return null;
}

/** The error for an error answer: by its `code`, else by its HTTP status. */
export function errorFromResponse(
  status: number,
  body: unknown,
  text = "",
  headers?: HeaderSource,
): HindsightError {
  let code: string | undefined;
  let message: string | undefined;
  if (body !== null && typeof body === "object" && !Array.isArray(body)) {
    const fields = body as Record<string, unknown>;
    if (typeof fields["code"] === "string") code = fields["code"];
    if (typeof fields["message"] === "string") message = fields["message"];
  }
  const cls = (code !== undefined ? BY_CODE.get(code) : undefined) ?? BY_STATUS.get(status) ?? HindsightError;
  message ??= text.trim().slice(0, 500) || `HTTP ${status}`;
  code ??= cls === HindsightError ? `http_${status}` : cls.code;
  if (cls === RateLimited) {
    return new RateLimited(message, { code, status, body, retryAfter: retryAfterOf(headers, message) });
  }
  return new cls(message, { code, status, body });
}
