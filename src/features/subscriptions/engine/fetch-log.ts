// The last /sub fetch of each user (users.sub_updated_at, sub_last_user_agent) without a database
// write per request: a fetch is noted in memory (fast-path hits included) and what was noted is
// written in batches (flush(): the subscription-cache job every few seconds, and once at shutdown),
// one set-based UPDATE per FETCHES_PER_WRITE users. Fetches of one user by one client (User-Agent)
// within FETCH_RESOLUTION_S of the last one noted are not noted again (markFetch: two numbers in the
// user's record), so a client that polls in a loop, or a million users polled at benchmark speed,
// costs the database at most one row per user and minute. The job's flushes have a time budget
// (FETCHES_FLUSH_BUDGET_MS a flush): beyond about a thousand new fetches a second the columns fall
// behind and catch up when the load drops, instead of taking the event loop from the requests; a
// user fetched again while waiting is updated where they wait, so the backlog stays one entry per
// user (not one per table) and is written once. Only fetches of known users are noted (after their record or
// row was found), so an unknown token never reaches the database. A failed write keeps the fetches
// for the next flush (unless a later fetch of the same user came meanwhile).
import { setImmediate as yieldToRequests } from "node:timers/promises";
import { FETCH_AGENT, FETCH_NOTED_AT, parseUuid, writeUuidText } from "./user-record.ts";

/** Longer User-Agents are cut to this many characters. */
export const MAX_USER_AGENT = 256;
/** Users per write (and per piece of work between two yields to requests: a few ms at most). */
export const FETCHES_PER_WRITE = 100;
/** sub_updated_at is the first fetch of a client after at least this many seconds without one. */
export const FETCH_RESOLUTION_S = 60;

/**
 * Whether a fetch at `nowS` (unix seconds) by `userAgent` of the record at page[at] is to be noted:
 * yes unless the record's last noted fetch is less than FETCH_RESOLUTION_S old and came from the same
 * User-Agent (by a 32-bit hash). Marks the record when it says yes. A stored record starts unmarked.
 */
export function markFetch(page: Buffer, at: number, nowS: number, userAgent: string | undefined): boolean {
  const agent = agentHash(userAgent);
  const last = page.readUInt32LE(at + FETCH_NOTED_AT);
  if (
    last !== 0 &&
    nowS >= last &&
    nowS - last < FETCH_RESOLUTION_S &&
    page.readUInt32LE(at + FETCH_AGENT) === agent
  )
    return false;
  page.writeUInt32LE(nowS >>> 0, at + FETCH_NOTED_AT);
  page.writeUInt32LE(agent, at + FETCH_AGENT);
  return true;
}

/** FNV-1a over the User-Agent's first MAX_USER_AGENT UTF-16 units (what is written); 0 for none or "". */
function agentHash(userAgent: string | undefined): number {
  if (userAgent === undefined || userAgent === "") return 0;
  let h = 0x811c9dc5;
  const end = Math.min(userAgent.length, MAX_USER_AGENT);
  for (let i = 0; i < end; i++) h = Math.imul(h ^ userAgent.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
/** Users a new table has room for before its first growth. */
const INITIAL_USERS = 1024;
/** Entries per segment of the columns (4,096: 64 KiB of ids, 32 of times, 16 of agents). */
const SEGMENT_SHIFT = 12;
const SEGMENT = 1 << SEGMENT_SHIFT;
const IN_SEGMENT = SEGMENT - 1;

export type FetchRecord = { userId: string; at: string; userAgent: string | null };

const idText = Buffer.alloc(36);
const scratch = new Uint8Array(16);

function cut(userAgent: string): string {
  return userAgent.length > MAX_USER_AGENT ? userAgent.slice(0, MAX_USER_AGENT) : userAgent;
}

/**
 * The latest fetch per user (of those noted since the table was started), kept without allocating
 * per fetch: an open-addressing table (linear probing) over the id's 16 bytes points to a slot
 * holding the id bytes, the time and the User-Agent (a number: each distinct User-Agent, cut to
 * MAX_USER_AGENT, is kept once per table, and dropped when no slot holds it any more, so a client
 * that sends a new one with every poll keeps one, not one per poll). Noting a fetch hashes and
 * compares 16 bytes; ids become strings only when they are written. 28 bytes a slot in segments of
 * SEGMENT slots that are added, never copied, and 8 bytes of table (doubled when half of it is used):
 * at a million waiting users 36 MB, and a growth holds only the old table besides (a table of columns
 * that doubled held the old and the new columns, 60 MB, and a JS array of User-Agent references).
 */
class Fetches {
  readonly #ids: Uint8Array[] = [];
  readonly #times: Float64Array[] = [];
  /** Per slot: 0 for none, else the User-Agent's index in #agentTexts + 1. */
  readonly #agents: Uint32Array[] = [];
  readonly #agentTexts: string[] = [];
  /** Per User-Agent number - 1: the slots that hold it (a number no slot holds is reused). */
  readonly #agentSlots: number[] = [];
  readonly #freeAgents: number[] = [];
  readonly #agentNumbers = new Map<string, number>();
  /** Slot + 1 per table entry; 0 is empty. At least twice the slots. */
  #table = new Int32Array(2 * INITIAL_USERS);
  count = 0;

  /** The table index holding the user's entry, or the empty one where it would go. */
  #probe(bytes: Uint8Array, at: number): number {
    const table = this.#table;
    const mask = table.length - 1;
    let i = hash(bytes, at) & mask;
    for (;;) {
      const entry = table[i] as number;
      if (entry === 0) return i;
      const slot = entry - 1;
      if (sameId(this.#ids[slot >>> SEGMENT_SHIFT] as Uint8Array, (slot & IN_SEGMENT) * 16, bytes, at))
        return i;
      i = (i + 1) & mask;
    }
  }

  /** Distinct User-Agents the slots hold: at most one per slot, however many a client sends. */
  get agents(): number {
    return this.#agentNumbers.size;
  }

  /** The User-Agent's number (0 for none), counted as held by one more slot. */
  #holdAgent(userAgent: string | undefined): number {
    if (userAgent === undefined || userAgent === "") return 0;
    const text = cut(userAgent);
    let number = this.#agentNumbers.get(text);
    if (number === undefined) {
      number = this.#freeAgents.pop() ?? this.#agentTexts.length + 1;
      this.#agentTexts[number - 1] = text;
      this.#agentSlots[number - 1] = 0;
      this.#agentNumbers.set(text, number);
    }
    this.#agentSlots[number - 1] = (this.#agentSlots[number - 1] as number) + 1;
    return number;
  }

  /** One slot fewer holds the User-Agent; with none left its text is dropped and its number reused. */
  #releaseAgent(number: number): void {
    if (number === 0) return;
    const held = (this.#agentSlots[number - 1] as number) - 1;
    this.#agentSlots[number - 1] = held;
    if (held > 0) return;
    this.#agentNumbers.delete(this.#agentTexts[number - 1] as string);
    this.#agentTexts[number - 1] = "";
    this.#freeAgents.push(number);
  }

  /** The slot's fetch becomes this one unless the slot's is later. */
  #keepLater(slot: number, atMs: number, userAgent: string | undefined): void {
    const times = this.#times[slot >>> SEGMENT_SHIFT] as Float64Array;
    const agents = this.#agents[slot >>> SEGMENT_SHIFT] as Uint32Array;
    const i = slot & IN_SEGMENT;
    if (atMs >= (times[i] as number)) {
      times[i] = atMs;
      const held = agents[i] as number;
      agents[i] = this.#holdAgent(userAgent);
      this.#releaseAgent(held);
    }
  }

  /** Keeps the fetch unless the user has a later one. */
  put(bytes: Uint8Array, at: number, atMs: number, userAgent: string | undefined): void {
    if (this.count * 2 >= this.#table.length) this.#grow();
    const i = this.#probe(bytes, at);
    const entry = this.#table[i] as number;
    if (entry !== 0) {
      this.#keepLater(entry - 1, atMs, userAgent);
      return;
    }
    const slot = this.count++;
    const segment = slot >>> SEGMENT_SHIFT;
    if (segment === this.#ids.length) {
      this.#ids.push(new Uint8Array(SEGMENT * 16));
      this.#times.push(new Float64Array(SEGMENT));
      this.#agents.push(new Uint32Array(SEGMENT));
    }
    const ids = this.#ids[segment] as Uint8Array;
    const to = (slot & IN_SEGMENT) * 16;
    for (let k = 0; k < 16; k++) ids[to + k] = bytes[at + k] as number;
    (this.#times[segment] as Float64Array)[slot & IN_SEGMENT] = atMs;
    (this.#agents[segment] as Uint32Array)[slot & IN_SEGMENT] = this.#holdAgent(userAgent);
    this.#table[i] = slot + 1;
  }

  /**
   * As put() for a user whose slot is at `fromSlot` or later (not yet taken for a write); true when
   * the user has such a slot, false (nothing changed) when they have none or an earlier one.
   */
  updateFrom(
    bytes: Uint8Array,
    at: number,
    atMs: number,
    userAgent: string | undefined,
    fromSlot: number,
  ): boolean {
    const slot = (this.#table[this.#probe(bytes, at)] as number) - 1;
    if (slot < fromSlot) return false; // -1: no entry
    this.#keepLater(slot, atMs, userAgent);
    return true;
  }

  /** Doubles the table (the columns stay where they are). */
  #grow(): void {
    const table = new Int32Array(this.#table.length * 2);
    const mask = table.length - 1;
    for (let slot = 0; slot < this.count; slot++) {
      let i = hash(this.#ids[slot >>> SEGMENT_SHIFT] as Uint8Array, (slot & IN_SEGMENT) * 16) & mask;
      while (table[i] !== 0) i = (i + 1) & mask;
      table[i] = slot + 1;
    }
    this.#table = table;
  }

  /** The fetches of slots [from, to) as rows. */
  rows(from: number, to: number): FetchRecord[] {
    const rows: FetchRecord[] = [];
    for (let slot = from; slot < to; slot++) {
      const segment = slot >>> SEGMENT_SHIFT;
      const i = slot & IN_SEGMENT;
      writeUuidText(this.#ids[segment] as Uint8Array, i * 16, idText, 0);
      const agent = (this.#agents[segment] as Uint32Array)[i] as number;
      rows.push({
        userId: idText.toString("latin1"),
        at: new Date((this.#times[segment] as Float64Array)[i] as number).toISOString(),
        userAgent: agent === 0 ? null : (this.#agentTexts[agent - 1] as string),
      });
    }
    return rows;
  }
}

export class FetchLog {
  #current = new Fetches();
  /** Fetches taken by a flush and not all written yet (written from #cursor on), or undefined. */
  #draining: Fetches | undefined;
  #cursor = 0;
  /** Slots of #draining before this one are written or being written (their rows are built). */
  #taken = 0;

  /** `now`: the time of a fetch; the fast path passes the one its lookup read (fetchedAt). */
  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Fetches waiting to be written. A user noted again while an older fetch waits is one (updated in
   * place), unless the older one was already taken for a write (then two: the later is written after).
   */
  get size(): number {
    return this.#current.count + (this.#draining === undefined ? 0 : this.#draining.count - this.#cursor);
  }

  /** Distinct User-Agents kept for the fetches waiting (at most one per waiting fetch). */
  get agents(): number {
    return this.#current.agents + (this.#draining?.agents ?? 0);
  }

  /** A fetch of the user with this lowercase uuid now (not a uuid: ignored). */
  note(userId: string, userAgent: string | undefined): void {
    if (parseUuid(userId, 0, scratch, 0)) this.#put(scratch, 0, this.now(), userAgent);
  }

  /** A fetch at `atMs` of the user whose id is the 16 bytes at page[at] (a record of the index). */
  noteBytes(page: Uint8Array, at: number, atMs: number, userAgent: string | undefined): void {
    this.#put(page, at, atMs, userAgent);
  }

  /**
   * Into the waiting fetch of the flush in progress when the user has one not yet taken for a write,
   * else into the current table. Under a flood of polls the flush falls behind and every user waits
   * in it: without this, the current table would fill with the same users again (two tables of every
   * user, and every user written twice; at 1,000,000 users about 80 MB more resident under load).
   */
  #put(bytes: Uint8Array, at: number, atMs: number, userAgent: string | undefined): void {
    if (this.#draining?.updateFrom(bytes, at, atMs, userAgent, this.#taken)) return;
    this.#current.put(bytes, at, atMs, userAgent);
  }

  /**
   * Hands what was noted to `write`, FETCHES_PER_WRITE users at a time with a yield to requests
   * between, until everything is written or `budgetMs` is spent (at least one batch per flush); how
   * many were written. Fetches are written in the order they were taken: what a flush left, then what
   * was noted since. A user noted again while waiting is updated where they wait; one noted again
   * after being taken for a write is written again, the later fetch last (and the UPDATE never moves
   * sub_updated_at back). Nothing is copied from one table to another: under a sustained flood a
   * flush costs its budget and one table's allocation now and then, no more. On a failed write the
   * fetches stay where they were (the next flush starts with the failed batch) and the error is
   * thrown.
   */
  async flush(
    write: (fetches: FetchRecord[]) => Promise<void>,
    budgetMs = Number.POSITIVE_INFINITY,
  ): Promise<number> {
    const started = performance.now();
    let written = 0;
    for (;;) {
      if (this.#draining === undefined) {
        if (this.#current.count === 0) return written;
        this.#draining = this.#current;
        this.#cursor = 0;
        this.#taken = 0;
        // Small: users noted again while they wait are updated in the draining table instead.
        this.#current = new Fetches();
      }
      const taken = this.#draining;
      const to = Math.min(taken.count, this.#cursor + FETCHES_PER_WRITE);
      this.#taken = to; // from here a note of these users goes to the current table
      try {
        await write(taken.rows(this.#cursor, to));
      } catch (error) {
        this.#taken = this.#cursor; // not written: their rows are built again, with any later note
        throw error;
      }
      written += to - this.#cursor;
      this.#cursor = to;
      if (to === taken.count) this.#draining = undefined;
      if (this.size === 0) return written;
      if (performance.now() - started >= budgetMs) return written;
      await yieldToRequests();
    }
  }
}

/** The 16 bytes mixed into 32 bits (uuids may share their leading time bytes). */
function hash(bytes: Uint8Array, at: number): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < 16; k += 4) {
    const word =
      (bytes[at + k] as number) |
      ((bytes[at + k + 1] as number) << 8) |
      ((bytes[at + k + 2] as number) << 16) |
      ((bytes[at + k + 3] as number) << 24);
    h = Math.imul(h ^ word, 0x01000193);
    h ^= h >>> 15;
  }
  return Math.imul(h, 0x2c1b3c6d) >>> 0;
}

function sameId(a: Uint8Array, at: number, b: Uint8Array, bt: number): boolean {
  for (let k = 0; k < 16; k++) if (a[at + k] !== b[bt + k]) return false;
  return true;
}
