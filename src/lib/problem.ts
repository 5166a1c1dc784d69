// Every failure as RFC 9457 problem+json with a stable `code`: AppErrors from services, Fastify's
// own 4xx (body parsing, routing), validation errors, and errors Node raises before Fastify sees the
// request (bad header syntax, oversized headers). Anything else is a logged 500 with a generic body.
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { AppError, DatabaseUnavailableError, RateLimitedError } from "./errors.ts";
import { applySecurityHeaders } from "./security-headers.ts";
import { describeValidationErrors } from "./validation.ts";

export type ProblemBody = {
  status: number;
  code: string;
  detail: string;
  errors?: { path: string; message: string }[];
};

export function sendProblem(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const problem = toProblem(error);
  // An outage answers every request with the same error: one line each, without a stack.
  if (error instanceof DatabaseUnavailableError) {
    request.log.warn(
      { code: problem.code, cause: String((error.cause as Error)?.message ?? "") },
      error.message,
    );
  } else if (problem.status >= 500) request.log.error({ err: error }, "request failed");
  if (error instanceof RateLimitedError || error instanceof DatabaseUnavailableError) {
    reply.header("retry-after", String(error.retryAfterSeconds));
  }
  applySecurityHeaders(reply);
  return reply
    .code(problem.status)
    .type("application/problem+json")
    .send({ type: "about:blank", title: titleOf(problem.status), instance: pathOf(request.url), ...problem });
}

/** The path of a request target without its query, also for an absolute-form target. */
function pathOf(url: string): string {
  const path = url.split("?")[0] ?? "";
  return path.startsWith("/") ? path : path.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, "") || "/";
}

export function toProblem(error: unknown): ProblemBody {
  if (error instanceof AppError) {
    return {
      status: error.status,
      code: error.code,
      detail: error.message,
      ...(error.details ? { errors: error.details } : {}),
    };
  }
  const fastifyError = error as Partial<FastifyError>;
  if (fastifyError.validation) {
    const errors = describeValidationErrors(
      fastifyError.validation as never,
      fastifyError.validationContext ?? "request",
    );
    const detail = errors.map((e) => `${e.path} ${e.message}`).join("; ");
    return { status: 400, code: "validation_failed", detail, errors };
  }
  const status = fastifyError.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    const known = fastifyError.code === undefined ? undefined : FASTIFY_ERRORS[fastifyError.code];
    return {
      status: known?.status ?? status,
      code: known?.code ?? "bad_request",
      detail: known?.detail ?? fastifyError.message ?? "bad request",
    };
  }
  return {
    status: 500,
    code: "internal_error",
    detail: "internal error; see the server log for this request id",
  };
}

/** Fastify's error codes → ours; a fixed detail where Fastify's message would echo the input. */
const FASTIFY_ERRORS: Record<string, { code: string; detail?: string; status?: number }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { code: "malformed_json" },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: "malformed_json" },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: "payload_too_large" },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    code: "unsupported_media_type",
    detail: "unsupported content-type; send application/json",
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: "bad_request" },
  FST_ERR_CTP_INVALID_TYPE: { code: "unsupported_media_type", detail: "invalid content-type header" },
  FST_ERR_BAD_URL: { code: "bad_url", detail: "the request path is not a valid URL (bad percent-escape)" },
  // Ids are at most 100 characters: a longer one names nothing (/sub/<anything> is a 404 too).
  FST_ERR_MAX_PARAM_LENGTH: { status: 404, code: "not_found", detail: "nothing has an id this long" },
  FST_ERR_ASYNC_CONSTRAINT: { code: "bad_request", detail: "the request matched no route constraint" },
};

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Payload Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

export function titleOf(status: number): string {
  return TITLES[status] ?? "Error";
}

/**
 * Node's `clientError`: the request could not even be parsed (bad header syntax, bad Content-Length,
 * headers over the limit, a timeout). Answered on the raw socket, as problem+json, then closed.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [status, code, detail] =
    error.code === "HPE_HEADER_OVERFLOW"
      ? [431, "headers_too_large", "the request headers are too large"]
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "request_timeout", "the request took too long to arrive"]
        : [400, "malformed_request", "the request is not valid HTTP/1.1"];
  const body = JSON.stringify({ type: "about:blank", title: titleOf(status), status, detail, code });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${titleOf(status)}\r\ncontent-type: application/problem+json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nx-content-type-options: nosniff\r\n` +
        `connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
