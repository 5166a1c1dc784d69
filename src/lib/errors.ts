// Errors that services throw; one Fastify handler (app.ts) maps them to RFC 9457 problem+json.
// `code` is stable snake_case that clients may switch on; its HTTP status comes from one catalogue.
// Code that reacts to an error matches its class (`instanceof CoreDownError`), never its code text.

/**
 * Every code the API answers with, and its status. docs/API.md lists each one (a test checks), and
 * an error class takes only the codes of its own status, so a code and its status never disagree.
 */
export const ERROR_CODES = {
  validation_failed: 400,
  malformed_json: 400,
  bad_request: 400,
  bad_url: 400,
  totp_code_rejected: 400,
  current_password_rejected: 400,
  malformed_request: 400,
  certificate_invalid: 400,
  certificate_unparseable: 400,
  certificate_expired: 400,
  key_unparseable: 400,
  key_encrypted: 400,
  key_mismatch: 400,
  domain_not_covered: 400,
  lobby_format_invalid: 400,
  csr_invalid: 400,
  unauthorized: 401,
  invalid_token: 401,
  invalid_credentials: 401,
  totp_required: 401,
  invalid_totp: 401,
  admin_disabled: 401,
  invalid_metrics_token: 401,
  join_token_invalid: 401,
  forbidden: 403,
  role_not_within: 403,
  session_required: 403,
  quota_exceeded: 403,
  scope_all_required: 403,
  not_found: 404,
  route_not_found: 404,
  core_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  admin_username_taken: 409,
  last_owner: 409,
  cannot_disable_self: 409,
  cannot_delete_self: 409,
  cannot_reset_self: 409,
  owner_scope_all: 409,
  totp_already_enabled: 409,
  totp_not_enrolled: 409,
  api_credentials_required: 409,
  credential_taken: 409,
  server_name_taken: 409,
  template_name_taken: 409,
  template_in_use: 409,
  certificate_name_taken: 409,
  certificate_in_use: 409,
  certificate_not_renewable: 409,
  renewal_in_progress: 409,
  port_taken: 409,
  tag_taken: 409,
  access_exists: 409,
  granted_by_group: 409,
  group_name_taken: 409,
  plan_name_taken: 409,
  core_conflict: 409,
  server_not_node: 409,
  import_running: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  nesting_too_deep: 422,
  template_invalid: 422,
  template_unsupported: 422,
  invalid_inbound: 422,
  certificate_required: 422,
  certificate_not_ready: 422,
  core_unsupported: 422,
  core_capacity: 422,
  core_request_refused: 422,
  invalid_link_target: 422,
  subscription_settings_invalid: 422,
  fair_use_settings_invalid: 422,
  host_invalid: 422,
  rate_limited: 429,
  headers_too_large: 431,
  internal_error: 500,
  database_unavailable: 503,
  core_unavailable: 502,
  core_error: 502,
  core_auth_failed: 502,
  core_timeout: 504,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_CODES;
/** The codes answered with `status`. */
export type CodeOf<Status extends number> = {
  [C in ErrorCode]: (typeof ERROR_CODES)[C] extends Status ? C : never;
}[ErrorCode];

export type ErrorDetail = { path: string; message: string };

export class AppError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
    this.status = ERROR_CODES[code];
  }
}

export class ValidationError extends AppError {
  constructor(message: string, details?: ErrorDetail[], code: CodeOf<400> = "validation_failed") {
    super(code, message, details);
  }
}
export class UnauthorizedError extends AppError {
  constructor(message = "A valid bearer token is required", code: CodeOf<401> = "unauthorized") {
    super(code, message);
  }
}
export class ForbiddenError extends AppError {
  constructor(message: string, code: CodeOf<403> = "forbidden") {
    super(code, message);
  }
}
/** A reseller's quota (docs/RESELLERS.md) would be exceeded: the detail's path names the quota. */
export class QuotaExceededError extends AppError {
  constructor(
    quota: "max_users" | "max_data_bytes" | "allowed_group_ids" | "allowed_plan_ids",
    message: string,
  ) {
    super("quota_exceeded", `quota ${quota} exceeded: ${message}`, [{ path: quota, message }]);
  }
}
export class NotFoundError extends AppError {
  constructor(what: string, id?: string, code: CodeOf<404> = "not_found") {
    super(code, id === undefined ? `${what} not found` : `${what} ${id} not found`);
  }
}
/** A 404 from looking up an id the request body gave: the same error, naming that field. */
export function notFoundAt(error: unknown, path: string, message: string): unknown {
  if (!(error instanceof AppError) || error.status !== 404) return error;
  return new AppError(error.code, error.message, [{ path, message }]);
}

export class ConflictError extends AppError {
  constructor(message: string, code: CodeOf<409> = "conflict") {
    super(code, message);
  }
}
/** Well-formed but impossible, e.g. a template using a feature the target core lacks. */
export class UnprocessableError extends AppError {
  constructor(message: string, details?: ErrorDetail[], code: CodeOf<422> = "unprocessable") {
    super(code, message, details);
  }
}
export class RateLimitedError extends AppError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super("rate_limited", message);
  }
}

/**
 * The database cannot be reached or cannot take the write now (PostgreSQL down or restarting, its
 * connections cut; SQLite busy past its timeout, disk full, I/O error): a 503 with Retry-After, never
 * a 500. db/unavailable.ts is the one place that recognises the drivers' errors.
 */
export class DatabaseUnavailableError extends AppError {
  readonly retryAfterSeconds = 5;

  constructor(message: string, options?: { cause?: unknown }) {
    super("database_unavailable", message, undefined, options);
  }
}

// Errors of the proxy-core API (src/cores). Core texts arrive as gRPC UNKNOWN and are classified there.
/** The core cannot be reached or did not answer in time: the change waits (pending), nothing was refused. */
export abstract class CoreDownError extends AppError {}
export class CoreUnavailableError extends CoreDownError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("core_unavailable", message, undefined, options);
  }
}
export class CoreTimeoutError extends CoreDownError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("core_timeout", message, undefined, options);
  }
}
/**
 * The core reports that a tag, user or counter does not exist. Not a NotFoundError: that one means
 * a row of ours is missing, and code that catches it must not catch this.
 */
export class CoreNotFoundError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("core_not_found", message, undefined, options);
  }
}
/** The core already has that user (duplicate email). */
export class CoreConflictError extends ConflictError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "core_conflict");
    if (options !== undefined) this.cause = options.cause;
  }
}
/** A proxy in front of the core refused our api_credentials. */
export class CoreAuthFailedError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("core_auth_failed", message, undefined, options);
  }
}
/** Any other failure reported by the core or by a proxy in front of it. */
export class CoreError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("core_error", message, undefined, options);
  }
}
/** The core lacks the call or feature (e.g. ListInbounds on V2Ray 4.x). */
export class CoreUnsupportedError extends UnprocessableError {
  constructor(message: string, details?: ErrorDetail[]) {
    super(message, details, "core_unsupported");
  }
}
/** Portcullis refused to send a request that would crash or corrupt the core. */
export class CoreRequestRefusedError extends UnprocessableError {
  constructor(message: string, details?: ErrorDetail[]) {
    super(message, details, "core_request_refused");
  }
}
