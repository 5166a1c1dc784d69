// The API side of the audit log: every authenticated call that is not a read (and every read of
// share links) gets an entry before its handler runs, completed in onSend (before the answer leaves, so a client that reads the log
// right after its write sees the outcome) with the status, the created id and the body's field names.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Principal } from "../../lib/http.ts";
import { actionOf } from "./actions.ts";
import type { AuditService } from "./audit.service.ts";

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Reads that hand out users' proxy credentials as ready-to-use share links are audited like writes
 * (who read whose links, when, from where). Other reads are not: the dashboard lists users and
 * servers all the time, and an entry per list would bury the entries that matter (docs/SECURITY.md).
 */
const AUDITED_READS: Record<string, (query: Record<string, unknown>) => boolean> = {
  "GET /api/users/:user_id/configs": () => true,
  "GET /api/users/:user_id/access/:inbound_id/config": () => true,
  // onRequest runs before the query is coerced: "true" is the one spelling the schema accepts.
  "GET /api/users/:id/access": (query) => query.include_uris === "true" || query.include_uris === true,
  "GET /api/servers/:server_id/inbounds/:inbound_id/configs": () => true,
};

/** Is this call recorded: every write, and the share-link reads above. */
export function isAudited(request: Pick<FastifyRequest, "method" | "routeOptions" | "query">): boolean {
  if (!READS.has(request.method)) return true;
  const read = AUDITED_READS[`${request.method} ${request.routeOptions.url ?? ""}`];
  return read?.((request.query ?? {}) as Record<string, unknown>) === true;
}

/** Starts the entry of an authenticated write (also one about to be refused for its role). */
export async function beginAudit(
  audit: AuditService,
  request: FastifyRequest,
  principal: Principal,
): Promise<void> {
  const route = request.routeOptions.url ?? request.url;
  request.auditId = await audit.begin({
    actor: {
      kind: principal.kind,
      id: principal.adminId,
      name: principal.username,
      tokenId: principal.tokenId,
    },
    action: actionOf(request.method, route),
    method: request.method,
    route,
    targets: stringValues(request.params),
    ip: request.ip,
    requestId: request.id,
  });
}

/** onSend: completes the entry with the outcome before the answer is sent. */
export async function finishAudit(
  audit: AuditService,
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
): Promise<void> {
  if (request.auditId === undefined) return;
  const id = request.auditId;
  request.auditId = undefined;
  const targets = stringValues(request.params);
  if (reply.statusCode === 201 && typeof payload === "string") Object.assign(targets, createdIds(payload));
  if (request.auditNotes !== undefined) Object.assign(targets, request.auditNotes);
  const fields = fieldsOf(request.body);
  if (fields !== null && fields.omitted > 0) targets.fields_omitted = String(fields.omitted);
  await audit.finish(id, reply.statusCode, targets, fields?.names ?? null);
}

/** At most this many body field names per entry, each at most FIELD_NAME_CHARS characters. */
export const MAX_FIELDS = 32;
export const FIELD_NAME_CHARS = 64;

/** The body's field names an entry keeps: bounded, so a refused 40,000-key body is a small entry
 * (the count of the rest goes to `targets.fields_omitted`). Every valid body of the API fits. */
export function fieldsOf(body: unknown): { names: string[]; omitted: number } | null {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return null;
  const names: string[] = [];
  let omitted = 0;
  for (const key in body) {
    if (!Object.hasOwn(body, key)) continue;
    if (names.length < MAX_FIELDS) names.push(key.slice(0, FIELD_NAME_CHARS));
    else omitted++;
  }
  return { names, omitted };
}

function stringValues(params: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (params === null || typeof params !== "object") return out;
  for (const [key, value] of Object.entries(params))
    if (typeof value === "string") out[key] = value.slice(0, 200);
  return out;
}

/** The ids a created object carries (`id`, and a grant's `user_id`). */
function createdIds(payload: string): Record<string, string> {
  try {
    const body = JSON.parse(payload) as Record<string, unknown>;
    const out: Record<string, string> = {};
    if (typeof body.id === "string") out.created_id = body.id;
    if (typeof body.user_id === "string") out.user_id = body.user_id;
    return out;
  } catch {
    return {};
  }
}
