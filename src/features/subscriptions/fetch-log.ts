// The last /sub fetch of each user (users.sub_updated_at, sub_last_user_agent) without a database
// write per request: a fetch is one Map set (fast-path hits included), and the map is written in
// batches (flush(): the subscription-cache job every few seconds, and once at shutdown), one
// set-based UPDATE per batch. Only fetches of known users are noted (after their record or row was
// found), so an unknown token never reaches the database. A failed write keeps the fetches for the
// next flush (unless a later fetch of the same user came meanwhile).
import { writeUuidText } from "./user-record.ts";

/** Longer User-Agents are cut to this many characters. */
export const MAX_USER_AGENT = 256;

type Noted = { atMs: number; userAgent: string | null };
export type FetchRecord = { userId: string; at: string; userAgent: string | null };

const idText = Buffer.alloc(36);

export class FetchLog {
  #pending = new Map<string, Noted>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Fetches waiting to be written. */
  get size(): number {
    return this.#pending.size;
  }

  note(userId: string, userAgent: string | undefined): void {
    const ua =
      userAgent === undefined || userAgent === ""
        ? null
        : userAgent.length > MAX_USER_AGENT
          ? userAgent.slice(0, MAX_USER_AGENT)
          : userAgent;
    const known = this.#pending.get(userId);
    if (known === undefined) this.#pending.set(userId, { atMs: this.now(), userAgent: ua });
    else {
      known.atMs = this.now();
      known.userAgent = ua;
    }
  }

  /** As note(), for the user id stored as 16 bytes at page[at] (a record of the subscription index). */
  noteBytes(page: Uint8Array, at: number, userAgent: string | undefined): void {
    writeUuidText(page, at, idText, 0);
    this.note(idText.toString("latin1"), userAgent);
  }

  /** Hands what was noted to `write` and forgets it; how many users were written. */
  async flush(write: (fetches: FetchRecord[]) => Promise<void>): Promise<number> {
    if (this.#pending.size === 0) return 0;
    const batch = this.#pending;
    this.#pending = new Map();
    const rows: FetchRecord[] = [];
    for (const [userId, noted] of batch) {
      rows.push({ userId, at: new Date(noted.atMs).toISOString(), userAgent: noted.userAgent });
    }
    try {
      await write(rows);
    } catch (error) {
      for (const [userId, noted] of batch) if (!this.#pending.has(userId)) this.#pending.set(userId, noted);
      throw error;
    }
    return rows.length;
  }
}
