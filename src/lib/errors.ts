// Errors that services throw; one Fastify handler (app.ts) maps them to RFC 9457 problem+json.
// `code` is stable snake_case that clients may switch on; `status` is the HTTP status.

export type ErrorDetail = { path: string; message: string };

export class AppError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details?: ErrorDetail[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

export class ValidationError extends AppError {
  constructor(message: string, details?: ErrorDetail[], code = "validation_failed") {
    super(code, message, 400, details);
  }
}
export class UnauthorizedError extends AppError {
  constructor(message = "A valid bearer token is required", code = "unauthorized") {
    super(code, message, 401);
  }
}
export class ForbiddenError extends AppError {
  constructor(message: string, code = "forbidden") {
    super(code, message, 403);
  }
}
export class NotFoundError extends AppError {
  constructor(what: string, id?: string, code = "not_found") {
    super(code, id === undefined ? `${what} not found` : `${what} ${id} not found`, 404);
  }
}
/** A 404 from looking up an id the request body gave: the same error, naming that field. */
export function notFoundAt(error: unknown, path: string, message: string): unknown {
  if (!(error instanceof AppError) || error.status !== 404) return error;
  return new AppError(error.code, error.message, 404, [{ path, message }]);
}

export class ConflictError extends AppError {
  constructor(message: string, code = "conflict") {
    super(code, message, 409);
  }
}
/** Well-formed but impossible, e.g. a template using a feature the target core lacks. */
export class UnprocessableError extends AppError {
  constructor(message: string, details?: ErrorDetail[], code = "unprocessable") {
    super(code, message, 422, details);
  }
}
export class RateLimitedError extends AppError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super("rate_limited", message, 429);
  }
}
export class CoreUnavailableError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("core_unavailable", message, 502, undefined, options);
  }
}
export class CoreTimeoutError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("core_timeout", message, 504, undefined, options);
  }
}

// Errors of the proxy-core API (src/cores). Core texts arrive as gRPC UNKNOWN and are classified there.
/** The core reports that a tag, user or counter does not exist. */
export class CoreNotFoundError extends NotFoundError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("core object", undefined, "core_not_found");
    this.message = message;
    if (options !== undefined) this.cause = options.cause;
  }
}
/** The core already has that user (duplicate email). */
export class CoreConflictError extends ConflictError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "core_conflict");
    if (options !== undefined) this.cause = options.cause;
  }
}
/** Any other failure reported by the core or by a proxy in front of it. */
export class CoreError extends AppError {
  constructor(message: string, code = "core_error", options?: { cause?: unknown }) {
    super(code, message, 502, undefined, options);
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
