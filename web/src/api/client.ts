// The typed API client: paths and shapes come from schema.d.ts, generated from the service's own
// OpenAPI document (`npm run gen:api`), so a changed schema breaks `npm run typecheck:web`.
import createClient from "openapi-fetch";
import { session } from "../auth/session.ts";
import type { components, paths } from "./schema";

export type Problem = components["schemas"]["Problem"];

/** A failed call, carrying the API's problem+json (its `detail` is what the UI shows). */
export class ApiError extends Error {
  constructor(
    readonly problem: Problem,
    /** A 429's Retry-After, in seconds. */
    readonly retryAfterSeconds?: number,
  ) {
    super(problem.detail);
  }
  get status(): number {
    return this.problem.status;
  }
  get code(): string {
    return this.problem.code;
  }
}

export const api = createClient<paths>({ baseUrl: window.location.origin });

api.use({
  onRequest({ request }) {
    const token = session.token();
    if (token !== null) request.headers.set("authorization", `Bearer ${token}`);
    return request;
  },
  async onResponse({ request, response }) {
    if (response.status !== 401 || request.url.endsWith("/api/auth/token")) return response;
    // A wrong second-factor code (confirming or turning off two-factor) is a 401 too, but the
    // session is fine: only the codes that mean the token is gone sign out.
    const code = await response
      .clone()
      .json()
      .then(
        (body: unknown) => (isProblem(body) ? body.code : undefined),
        () => undefined,
      );
    if (code !== "invalid_totp" && code !== "totp_required") session.expire();
    return response;
  },
});

function isProblem(value: unknown): value is Problem {
  return typeof value === "object" && value !== null && "detail" in value && "status" in value;
}

type Result<D> = { data?: D; error?: unknown; response: Response };

/** The data of a call, or an ApiError with the problem the API sent (or one made from the status). */
export async function unwrap<D>(call: Promise<Result<D>>): Promise<D> {
  let result: Result<D>;
  try {
    result = await call;
  } catch (error) {
    throw new ApiError({
      type: "about:blank",
      title: "Network error",
      status: 0,
      code: "network_error",
      detail: `the service did not answer: ${error instanceof Error ? error.message : String(error)}`,
    });
  }
  if (result.response.ok) return result.data as D;
  const { error, response } = result;
  const retryAfter = Number(response.headers.get("retry-after") ?? Number.NaN);
  if (isProblem(error)) throw new ApiError(error, Number.isFinite(retryAfter) ? retryAfter : undefined);
  throw new ApiError({
    type: "about:blank",
    title: response.statusText,
    status: response.status,
    code: "http_error",
    detail: `HTTP ${response.status} ${response.statusText}${typeof error === "string" && error ? `: ${error}` : ""}`,
  });
}

/** `{ params: { path: { id } } }`: the options of a call on one resource by its id. */
export function byId(id: string) {
  return { params: { path: { id } } } as const;
}
