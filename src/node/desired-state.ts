// The last desired state the panel set on this node: every inbound and user it added, as the exact
// request bytes it sent, so the agent can apply them itself after a core restart (its own, or the
// core's) while the panel is away. Kept on disk as a snapshot (written atomically) plus an append-only
// log of changes (fsync'd in groups before the panel's call is answered; a torn last line is
// ignored), compacted into a new snapshot when the log grows past the state's size.
// In memory each call is kept compact: its request's bytes as a one-byte string (a byte a character:
// a quarter smaller than the base64 on disk, and no Buffer object per user) and its method path shared
// by every call of that method (a path from a request's URL would keep the whole URL alive): about
// 2 MB for 10,000 users instead of 4.5 MB. The snapshot is written in slices, not as one string.

import { existsSync } from "node:fs";
import { open, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { RelayAnswer } from "../cores/core-relay.ts";
import type { DesiredChange } from "../cores/relay-record.ts";
import { writeFileAtomicWith } from "./atomic-file.ts";

/** A call as stored on disk: the request's bytes in base64. */
type StoredCall = { path: string; request: string };
/** A call as kept in memory: `bytes` holds one byte per character (latin1), `path` is shared. */
type Call = { path: string; bytes: string };
type LogLine =
  | { op: "set-inbound"; tag: string; call: StoredCall }
  | { op: "del-inbound"; tag: string }
  | { op: "set-user"; tag: string; email: string; call: StoredCall }
  | { op: "del-user"; tag: string; email: string };

/** Lines per write of a snapshot: a slice of the state in memory at a time, never all of it. */
const SNAPSHOT_SLICE = 500;

const SNAPSHOT = "desired.json";
const LOG = "desired.log";

export type ReplayResult = { inbounds: number; users: number; failed: number; durationMs: number };

export class DesiredState {
  private readonly inbounds = new Map<string, Call>();
  private readonly users = new Map<string, Map<string, Call>>();
  /** One string per method path (the core API has a handful of them). */
  private readonly paths = new Map<string, string>();
  private logLines = 0;
  private pending: { line: string; done: (error?: unknown) => void }[] = [];
  private flushing: Promise<void> | null = null;

  private constructor(private readonly dir: string) {}

  static async load(dir: string): Promise<DesiredState> {
    const state = new DesiredState(dir);
    const snapshotPath = join(dir, SNAPSHOT);
    if (existsSync(snapshotPath)) {
      const lines = JSON.parse(await readFile(snapshotPath, "utf8")) as LogLine[];
      for (const line of lines) state.apply(line);
    }
    const logPath = join(dir, LOG);
    if (existsSync(logPath)) {
      for (const text of (await readFile(logPath, "utf8")).split("\n")) {
        if (text === "") continue;
        try {
          state.apply(JSON.parse(text) as LogLine);
          state.logLines += 1;
        } catch {
          break; // a torn last line: the call it belonged to was never answered
        }
      }
    }
    return state;
  }

  get size(): { inbounds: number; users: number } {
    let users = 0;
    for (const byEmail of this.users.values()) users += byEmail.size;
    return { inbounds: this.inbounds.size, users };
  }

  /** Every email in some inbound. */
  emails(): Set<string> {
    const out = new Set<string>();
    for (const byEmail of this.users.values()) for (const email of byEmail.keys()) out.add(email);
    return out;
  }

  /** The emails the inbound `tag` holds now. */
  emailsOf(tag: string): string[] {
    return [...(this.users.get(tag)?.keys() ?? [])];
  }

  /** Records a change the core accepted; resolves once it is on disk. */
  record(change: DesiredChange, path: string, request: Uint8Array): Promise<void> {
    const call: StoredCall = { path, request: Buffer.from(request).toString("base64") };
    const line: LogLine =
      change.kind === "add-inbound"
        ? { op: "set-inbound", tag: change.tag, call }
        : change.kind === "remove-inbound"
          ? { op: "del-inbound", tag: change.tag }
          : change.kind === "add-user"
            ? { op: "set-user", tag: change.tag, email: change.email, call }
            : { op: "del-user", tag: change.tag, email: change.email };
    this.apply(line);
    return new Promise((resolve, reject) => {
      this.pending.push({
        line: JSON.stringify(line),
        done: (error) => (error === undefined ? resolve() : reject(error)),
      });
      this.flushing ??= this.flush();
    });
  }

  /** Sends every inbound, then every user, as recorded; "already exists" counts as applied. */
  async replay(
    send: (path: string, request: Uint8Array) => Promise<RelayAnswer>,
    concurrency = 16,
  ): Promise<ReplayResult> {
    const started = performance.now();
    let failed = 0;
    const run = async (calls: Call[]) => {
      let next = 0;
      const worker = async () => {
        while (next < calls.length) {
          const call = calls[next++] as Call;
          const answer = await send(call.path, Buffer.from(call.bytes, "latin1"));
          if (!answer.ok && !/already exists|existing tag/i.test(answer.details)) failed += 1;
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, calls.length) }, worker));
    };
    const inbounds = [...this.inbounds.values()];
    const users = [...this.users.values()].flatMap((byEmail) => [...byEmail.values()]);
    await run(inbounds);
    await run(users);
    return {
      inbounds: inbounds.length,
      users: users.length,
      failed,
      durationMs: performance.now() - started,
    };
  }

  private compactCall(stored: StoredCall): Call {
    let path = this.paths.get(stored.path);
    if (path === undefined) {
      // A copy of its own (not a slice of a longer string), kept once.
      path = Buffer.from(stored.path, "utf8").toString("utf8");
      this.paths.set(path, path);
    }
    return { path, bytes: Buffer.from(stored.request, "base64").toString("latin1") };
  }

  private apply(line: LogLine): void {
    if (line.op === "set-inbound") {
      this.inbounds.set(line.tag, this.compactCall(line.call));
      this.users.delete(line.tag); // a new inbound starts without the old one's users
    } else if (line.op === "del-inbound") {
      this.inbounds.delete(line.tag);
      this.users.delete(line.tag);
    } else if (line.op === "set-user") {
      let byEmail = this.users.get(line.tag);
      if (byEmail === undefined) {
        byEmail = new Map();
        this.users.set(line.tag, byEmail);
      }
      byEmail.set(line.email, this.compactCall(line.call));
    } else this.users.get(line.tag)?.delete(line.email);
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0);
      try {
        const handle = await open(join(this.dir, LOG), "a", 0o600);
        try {
          await handle.write(`${batch.map((entry) => entry.line).join("\n")}\n`);
          await handle.datasync();
        } finally {
          await handle.close();
        }
        this.logLines += batch.length;
        if (this.logLines > 2 * (this.size.inbounds + this.size.users) + 1000) await this.compact();
        for (const entry of batch) entry.done();
      } catch (error) {
        for (const entry of batch) entry.done(error);
      }
    }
    this.flushing = null;
  }

  /** The state as one snapshot, then the log emptied (replaying it on the snapshot changes nothing). */
  private async compact(): Promise<void> {
    const stored = (call: Call): StoredCall => ({
      path: call.path,
      request: Buffer.from(call.bytes, "latin1").toString("base64"),
    });
    await writeFileAtomicWith(join(this.dir, SNAPSHOT), async (handle) => {
      // One JSON array, written a slice at a time. A change recorded meanwhile may or may not be in
      // the snapshot, and its line is queued for the log that follows it either way: every line sets
      // or deletes one key outright, so the log replayed on the snapshot ends in the same state.
      let slice: string[] = [];
      let first = true;
      const write = async (force: boolean) => {
        if (slice.length === 0 || (!force && slice.length < SNAPSHOT_SLICE)) return;
        await handle.write(`${first ? "[" : ","}${slice.join(",")}`);
        first = false;
        slice = [];
      };
      for (const [tag, call] of this.inbounds) {
        slice.push(JSON.stringify({ op: "set-inbound", tag, call: stored(call) } satisfies LogLine));
        await write(false);
      }
      for (const [tag, byEmail] of this.users) {
        for (const [email, call] of byEmail) {
          slice.push(JSON.stringify({ op: "set-user", tag, email, call: stored(call) } satisfies LogLine));
          await write(false);
        }
      }
      await write(true);
      await handle.write(first ? "[]" : "]");
    });
    await rm(join(this.dir, LOG), { force: true });
    this.logLines = 0;
  }
}
