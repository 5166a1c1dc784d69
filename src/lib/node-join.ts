// The join string `portcullis node join` takes: "pcn1." + base64url of a small JSON document with the
// panel's URL, the server's id, the one-time token and the SHA-256 fingerprint of the panel CA, so
// the agent can tell the panel's real CA from one put in its way. Shared by panel and agent.

export type JoinTicket = { panelUrl: string; serverId: string; token: string; caFingerprint: string };

const PREFIX = "pcn1.";
const MAX_LENGTH = 4096;

export function encodeJoinString(ticket: JoinTicket): string {
  const body = { u: ticket.panelUrl, s: ticket.serverId, t: ticket.token, f: ticket.caFingerprint };
  return PREFIX + Buffer.from(JSON.stringify(body), "utf8").toString("base64url");
}

/** The ticket, or a message saying what is wrong (never quoting the token). */
export function decodeJoinString(text: string): JoinTicket | string {
  const trimmed = text.trim();
  if (trimmed.length > MAX_LENGTH || !trimmed.startsWith(PREFIX)) return "not a Portcullis join string";
  const encoded = trimmed.slice(PREFIX.length);
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) return "the join string is damaged (copy it again)";
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(encoded, "base64url").toString("utf8"));
  } catch {
    return "the join string is damaged (copy it again)";
  }
  if (typeof body !== "object" || body === null) return "the join string is damaged (copy it again)";
  const { u, s, t, f } = body as Record<string, unknown>;
  if (typeof u !== "string" || !/^https?:\/\/[^\s/?#]+[^\s]*$/.test(u))
    return "the join string names no panel URL";
  if (typeof s !== "string" || !/^[0-9a-f-]{36}$/.test(s)) return "the join string names no server";
  if (typeof t !== "string" || !/^[A-Za-z0-9_-]{32,128}$/.test(t)) return "the join string carries no token";
  if (typeof f !== "string" || !/^[0-9a-f]{64}$/.test(f)) return "the join string carries no CA fingerprint";
  return { panelUrl: u.replace(/\/+$/, ""), serverId: s, token: t, caFingerprint: f };
}
