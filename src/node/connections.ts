// Who is connected, from the core's access log (every core writes a line per accepted connection
// with the source address and, for an authenticated user, the email), and cutting a user's open
// connections when the panel removes the user: Xray and V2Ray only refuse new connections after
// RemoveUser, so the agent destroys the sockets of the connections the log attributed to that user
// (`ss -K`, SOCK_DESTROY, which needs CAP_NET_ADMIN). Kept bounded: entries expire after the window.

import { execFile } from "node:child_process";

export type Source = { ip: string; port: number; seenAt: number };

/** `[from ]tcp:1.2.3.4:5678 accepted tcp:host:443 [in >> out] email: user@x` (Xray and V2Ray). */
const ACCESS_LINE = /(?:from )?(?:tcp:|udp:)?(\[[0-9a-fA-F:.]+\]|[0-9.]+):(\d{1,5}) accepted .*?email: (\S+)/;
const MAX_SOURCES_PER_USER = 256;

export class ConnectionTracker {
  private readonly byEmail = new Map<string, Map<string, Source>>();

  constructor(
    /** How long a source counts as online after its last connection. */
    private readonly windowMs = 5 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** One access-log line; lines without a user are ignored. */
  observe(line: string): void {
    const match = ACCESS_LINE.exec(line);
    if (match === null) return;
    const [, rawIp = "", port = "0", email = ""] = match;
    const ip = rawIp.replace(/^\[|\]$/g, "");
    let sources = this.byEmail.get(email);
    if (sources === undefined) {
      sources = new Map();
      this.byEmail.set(email, sources);
    }
    sources.delete(`${ip}:${port}`);
    sources.set(`${ip}:${port}`, { ip, port: Number(port), seenAt: this.now() });
    if (sources.size > MAX_SOURCES_PER_USER) sources.delete(sources.keys().next().value ?? "");
  }

  /** Per email, the addresses seen within the window, newest first. */
  online(): { email: string; addresses: { ip: string; last_seen: string }[] }[] {
    this.expire();
    return [...this.byEmail].map(([email, sources]) => {
      const byIp = new Map<string, number>();
      for (const source of sources.values())
        byIp.set(source.ip, Math.max(byIp.get(source.ip) ?? 0, source.seenAt));
      const addresses = [...byIp]
        .sort((a, b) => b[1] - a[1])
        .map(([ip, seenAt]) => ({ ip, last_seen: new Date(seenAt).toISOString() }));
      return { email, addresses };
    });
  }

  emails(): string[] {
    return [...this.byEmail.keys()];
  }

  /** The user's connections the log has seen, forgotten here: the caller cuts them. */
  take(email: string): Source[] {
    const sources = [...(this.byEmail.get(email)?.values() ?? [])];
    this.byEmail.delete(email);
    return sources;
  }

  private expire(): void {
    const oldest = this.now() - this.windowMs;
    for (const [email, sources] of this.byEmail) {
      for (const [key, source] of sources) if (source.seenAt < oldest) sources.delete(key);
      if (sources.size === 0) this.byEmail.delete(email);
    }
  }
}

/** Sources per `ss -K` call: one process for many (each spawn costs most of a cut on a loaded host). */
const SOURCES_PER_CALL = 64;

/**
 * Destroys the sockets whose remote end is one of the sources (the core's side of each client
 * connection), with one `ss -K` per SOURCES_PER_CALL sources: `( dst a:p or dst b:q … )`, the exact
 * address and port of each. `ss -K` needs CAP_NET_ADMIN; without it nothing is cut and the error says so.
 */
export async function destroySockets(
  sources: readonly Source[],
  ss = "ss",
): Promise<{ cut: number; error: string | null }> {
  let cut = 0;
  let error: string | null = null;
  for (let i = 0; i < sources.length; i += SOURCES_PER_CALL) {
    const filter: string[] = ["("];
    for (const [j, source] of sources.slice(i, i + SOURCES_PER_CALL).entries()) {
      const host = source.ip.includes(":") ? `[${source.ip}]` : source.ip;
      if (j > 0) filter.push("or");
      filter.push("dst", `${host}:${source.port}`);
    }
    filter.push(")");
    const result = await new Promise<{ out: string; err: string | null }>((resolve) => {
      execFile(ss, ["-K", "-t", "-n", ...filter], { timeout: 3000 }, (e, stdout, stderr) =>
        resolve({
          out: String(stdout),
          err: e === null ? null : String(stderr || e.message).slice(0, 300),
        }),
      );
    });
    if (result.err !== null) error = result.err;
    cut += result.out.split("\n").filter((line) => /ESTAB|CLOSE|FIN|SYN/.test(line)).length;
  }
  return { cut, error };
}
