// The core's recent log lines as the node agent hands them to the panel and the panel to the
// dashboard (GET /api/servers/{id}/node-log). A proxy user's credential (a UUID for VLESS/VMess, 24
// or more random base64 characters for Trojan and Shadowsocks) must never leave the host in them, so
// every UUID and every run of 20 or more base64 characters is masked (a long path segment or domain
// label may be masked too: a line loses a word rather than risk a secret). The users' emails
// (`u-` and 16 hex digits) and addresses stay: they are what an operator reads the log for. Control
// characters go, and a line is cut at CORE_LOG_LINE_MAX characters.

/** How many lines the agent keeps and hands out (the supervisor's ring). */
export const CORE_LOG_LINES = 200;
export const CORE_LOG_LINE_MAX = 1000;
export const MASK = "[redacted]";

const UUID = /[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}/g;
const OPAQUE = /[A-Za-z0-9+/=_-]{20,}/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function redactLogLine(line: string): string {
  const clean = line.replace(CONTROL, "").replace(UUID, MASK).replace(OPAQUE, MASK);
  return clean.length > CORE_LOG_LINE_MAX ? `${clean.slice(0, CORE_LOG_LINE_MAX)}…` : clean;
}

/** The last `CORE_LOG_LINES` lines, each masked. */
export function redactLogLines(lines: readonly string[]): string[] {
  return lines.slice(-CORE_LOG_LINES).map(redactLogLine);
}
