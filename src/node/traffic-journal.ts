// Traffic the agent has read from its core and the panel has not acknowledged yet. The agent reads
// the core's counters with reset every interval (so a core restart loses at most one interval) and
// writes each non-empty read as a batch file with the next sequence number (atomically, before the
// read is forgotten). The panel takes the batches, counts each (server, epoch, sequence) once, and
// acknowledges the highest; only then are they deleted. The epoch is made once per journal, so a
// journal started afresh (a wiped directory) is never mistaken for batches already counted.

import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "./atomic-file.ts";

export type Counter = [name: string, value: string];
export type Batch = { seq: number; read_at: string; stats: Counter[] };
export type ReadCounters = () => Promise<Counter[]>;

const DIR = "traffic";
const MAX_BATCHES_PER_ANSWER = 500;

export class TrafficJournal {
  private lastSeq = 0;
  private chain: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly dir: string,
    readonly epoch: string,
  ) {}

  static async open(root: string): Promise<TrafficJournal> {
    const dir = join(root, DIR);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const epochPath = join(dir, "epoch");
    if (!existsSync(epochPath)) await writeFileAtomic(epochPath, randomBytes(12).toString("hex"), 0o600);
    const journal = new TrafficJournal(dir, (await readFile(epochPath, "utf8")).trim());
    const seqPath = join(dir, "seq");
    const stored = existsSync(seqPath) ? Number(await readFile(seqPath, "utf8")) : 0;
    const files = await journal.batchSeqs();
    journal.lastSeq = Math.max(Number.isFinite(stored) ? stored : 0, ...files, 0);
    return journal;
  }

  /** Reads the counters (with reset) into a new batch; one read at a time. */
  collect(read: ReadCounters): Promise<void> {
    const run = this.chain.then(async () => {
      const stats = (await read()).filter(([, value]) => value !== "0");
      if (stats.length === 0) return;
      const seq = this.lastSeq + 1;
      // The sequence first: a crash after it leaves a gap, never a number used twice.
      await writeFileAtomic(join(this.dir, "seq"), String(seq), 0o600);
      this.lastSeq = seq;
      const batch: Batch = { seq, read_at: new Date().toISOString(), stats };
      await writeFileAtomic(
        join(this.dir, `${String(seq).padStart(12, "0")}.json`),
        JSON.stringify(batch),
        0o600,
      );
    });
    this.chain = run.catch(() => {});
    return run;
  }

  /** The unacknowledged batches, oldest first (at most 500 per answer). */
  async pending(): Promise<Batch[]> {
    const seqs = (await this.batchSeqs()).sort((a, b) => a - b).slice(0, MAX_BATCHES_PER_ANSWER);
    const batches: Batch[] = [];
    for (const seq of seqs) {
      try {
        batches.push(JSON.parse(await readFile(this.file(seq), "utf8")) as Batch);
      } catch {
        // acknowledged (deleted) meanwhile
      }
    }
    return batches;
  }

  /** The panel counted every batch up to `seq` of this epoch: they go. */
  async acknowledge(epoch: string, seq: number): Promise<number> {
    if (epoch !== this.epoch) return 0;
    let removed = 0;
    for (const each of await this.batchSeqs()) {
      if (each <= seq) {
        await rm(this.file(each), { force: true });
        removed += 1;
      }
    }
    return removed;
  }

  private file(seq: number): string {
    return join(this.dir, `${String(seq).padStart(12, "0")}.json`);
  }

  private async batchSeqs(): Promise<number[]> {
    return (await readdir(this.dir)).flatMap((name) =>
      /^\d{12}\.json$/.test(name) ? [Number(name.slice(0, 12))] : [],
    );
  }
}
