// Maps gRPC failures to the project's errors. V2Ray and Xray report every refusal as UNKNOWN
// with a Go error chain, so those are classified by text; secrets are cut out of every message.

import { status as GrpcStatus, type ServiceError } from "@grpc/grpc-js";
import {
  type AppError,
  CoreAuthFailedError,
  CoreConflictError,
  CoreError,
  CoreNotFoundError,
  CoreTimeoutError,
  CoreUnavailableError,
  CoreUnsupportedError,
} from "../lib/errors.ts";
import { redact } from "../lib/redact.ts";

export type CallContext = { address: string; method: string; secrets: readonly string[] };

export function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as Partial<ServiceError>).code === "number";
}

export function mapGrpcError(error: unknown, context: CallContext): AppError {
  const where = `core ${context.address} ${context.method}`;
  if (!isServiceError(error)) {
    const text = error instanceof Error ? error.message : String(error);
    return new CoreError(`${where} failed: ${redact(text, context.secrets)}`);
  }
  const details = redact(error.details || error.message, context.secrets);
  const cause = { cause: { code: error.code, details } };
  switch (error.code) {
    case GrpcStatus.UNAVAILABLE:
    // A core that exits (restart, upgrade) cancels the calls on its closing connection.
    case GrpcStatus.CANCELLED:
      return new CoreUnavailableError(`${where}: core unreachable: ${details}`, cause);
    case GrpcStatus.DEADLINE_EXCEEDED:
      return new CoreTimeoutError(`${where}: no answer before the deadline`, cause);
    case GrpcStatus.UNIMPLEMENTED:
      return new CoreUnsupportedError(`${where}: the core does not implement this call`);
    case GrpcStatus.UNAUTHENTICATED:
    case GrpcStatus.PERMISSION_DENIED:
      return new CoreAuthFailedError(
        `${where}: refused by the API (check api_credentials): ${details}`,
        cause,
      );
    case GrpcStatus.UNKNOWN:
      return classifyCoreText(`${where}: ${details}`, details, cause);
    default:
      return new CoreError(`${where}: ${GrpcStatus[error.code] ?? error.code}: ${details}`, cause);
  }
}

function classifyCoreText(message: string, details: string, cause: { cause: unknown }): AppError {
  if (/already exists|existing tag found/i.test(details)) return new CoreConflictError(message, cause);
  if (/not found|not enough information for making a decision/i.test(details)) {
    return new CoreNotFoundError(message, cause);
  }
  return new CoreError(message, cause);
}
