// What a right answer is, checked outside the measured window (wrk looks at status codes only): for a
// seeded user, exactly the body and profile headers the pure renderer (subscription.ts) gives for
// their name and credentials over the seeded inbounds; and for the fastify and limit targets, the
// sampled answer byte for byte. A benchmark of error pages or wrong bodies would measure nothing.
import { parse as parseYaml } from "yaml";
import {
  type DocumentBases,
  entriesOf,
  renderDocument,
} from "../../src/features/subscriptions/document-template.ts";
import { CONTENT_TYPES } from "../../src/features/subscriptions/formats.ts";
import { renderSubscription } from "../../src/features/subscriptions/subscription.ts";
import type { Format } from "../../src/lib/subscription-formats.ts";
import { DEFAULT_MIHOMO_BASE } from "../../src/links/formats/mihomo.ts";
import { DEFAULT_SINGBOX_BASE } from "../../src/links/formats/singbox.ts";
import type { SeededInbound, SeededUser } from "./seed.ts";

export type Sample = {
  body: string;
  /** Headers the endpoint set itself (not the ones Node adds), for the other targets to repeat. */
  headers: Record<string, string>;
};

const AUTOMATIC = new Set(["date", "connection", "keep-alive", "content-length", "transfer-encoding"]);
const CHECKS_IN_FLIGHT = 16;

/** The default base documents (the service's, as nothing was saved). */
const BASES: DocumentBases = {
  version: 0,
  mihomo: parseYaml(DEFAULT_MIHOMO_BASE),
  singbox: DEFAULT_SINGBOX_BASE,
};

/** Expected status 200 answer of one user; bodies as their bytes in a latin1 string. */
export function expectedAnswer(
  user: SeededUser,
  inbounds: readonly SeededInbound[],
  format: Format = "base64",
) {
  const rendered = renderSubscription({
    userName: user.name,
    grants: inbounds.map((inbound, i) => ({
      credential: user.credentials[i] ?? "",
      link_params: inbound.linkParams,
      uplink_bytes: 0,
      downlink_bytes: 0,
    })),
  });
  let body = rendered.body;
  if (format === "links") body = Buffer.from(body, "base64").toString("latin1");
  else if (format !== "base64") {
    const params = inbounds.map((inbound) => inbound.linkParams);
    const text = renderDocument(format, entriesOf(params, user.credentials, format), BASES).body;
    body = Buffer.from(text, "utf8").toString("latin1");
  }
  return {
    body,
    headers: {
      "content-type": CONTENT_TYPES[format],
      "subscription-userinfo": rendered.headers.userinfo,
      "profile-title": rendered.headers.title,
      "content-disposition": rendered.headers.disposition,
      "content-length": String(body.length),
    } as Record<string, string>,
  };
}

/** The request path of a user in the format measured (base64: the plain /sub/{id} every app polls). */
export function pathOf(id: string, format: Format): string {
  return format === "base64" ? `/sub/${id}` : `/sub/${id}/${format}`;
}

/** The body's bytes as a latin1 string (what the service writes, and the other targets repeat). */
async function bytesOf(response: Response): Promise<string> {
  return Buffer.from(await response.arrayBuffer()).toString("latin1");
}

/**
 * Fetches /sub/<id> of each user (16 at a time) and compares it with what it must be; throws with
 * the first difference. Returns the first answer as the sample the other targets repeat.
 */
export async function checkSubscriptions(
  baseUrl: string,
  users: ReadonlyMap<string, SeededUser>,
  inbounds: readonly SeededInbound[],
  format: Format = "base64",
): Promise<Sample> {
  const ids = [...users.keys()];
  if (ids.length === 0) throw new Error("no users to check");
  let sample: Sample | undefined;
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < ids.length; i = next++) {
      const id = ids[i] as string;
      const response = await fetch(`${baseUrl}${pathOf(id, format)}`, {
        signal: AbortSignal.timeout(30_000),
      });
      const body = await bytesOf(response);
      const problem = problemOf(
        response,
        body,
        expectedAnswer(users.get(id) as SeededUser, inbounds, format),
      );
      if (problem !== undefined) throw new Error(`GET ${pathOf(id, format)}: ${problem}`);
      if (i === 0) sample = { body, headers: ownHeaders(response) };
    }
  };
  await Promise.all(Array.from({ length: CHECKS_IN_FLIGHT }, worker));
  if (sample === undefined) throw new Error("the first user was not checked");
  return sample;
}

/** The fastify and limit targets must send what /sub sent: same status, body and headers. */
export async function checkSameAnswer(baseUrl: string, path: string, sample: Sample): Promise<void> {
  const response = await fetch(`${baseUrl}${path}`, { signal: AbortSignal.timeout(10_000) });
  const body = await bytesOf(response);
  const headers = ownHeaders(response);
  if (response.status !== 200 || body !== sample.body) {
    throw new Error(`GET ${path}: status ${response.status}, body differs from the sample`);
  }
  if (JSON.stringify(headers) !== JSON.stringify(sample.headers)) {
    throw new Error(
      `GET ${path}: headers ${JSON.stringify(headers)} differ from ${JSON.stringify(sample.headers)}`,
    );
  }
}

function ownHeaders(response: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!AUTOMATIC.has(name)) headers[name] = value;
  });
  return headers;
}

function problemOf(
  response: Response,
  body: string,
  expected: ReturnType<typeof expectedAnswer>,
): string | undefined {
  if (response.status !== 200) return `status ${response.status}: ${body.slice(0, 200)}`;
  if (body !== expected.body) {
    const links = Buffer.from(body, "base64").toString("utf8").split("\n");
    return `body differs from the expected one; got ${JSON.stringify(links.join(" | ").slice(0, 300))}`;
  }
  for (const [name, value] of Object.entries(expected.headers)) {
    const got = response.headers.get(name);
    if (got !== value) return `${name}: ${JSON.stringify(got)}, expected ${JSON.stringify(value)}`;
  }
  return undefined;
}
