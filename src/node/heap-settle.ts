// Full garbage collections for the agent (with `--expose-gc`, which the systemd unit and the Docker
// stage set; without it this does nothing). The agent's work comes in bursts — the panel's grants of
// thousands of users relayed one call each, a re-apply after a core restart — and in between it is
// idle, when V8 collects nothing (nothing allocates) and keeps the heap the burst grew: 10,000 relayed
// grants left 73 MB of heap committed for 20 MB live (RSS 130 MB; 78 MB after one full collection).
// So: during a burst, a collection whenever the used heap has grown GROWTH_BYTES (or GROWTH_SHARE of
// what the last one left, when that is more) since the last one,
// so the peak stays near what is live plus that; once the work pauses for QUIET_MS, one more if the
// heap's used or committed size grew since (V8 commits new pages long before its own full
// collection), so the idle agent holds only what it keeps. Each takes a few tens of ms (20 MB live).
// Not on committed growth during a burst: after each collection V8 commits its young generation and
// fresh pages again at once, so that fired every few calls and made a re-apply of 10,000 users 2.6×
// slower (bench:node, 2026-12-02). A relayed call leaves about 20 KB of garbage: a grant of 10,000
// users runs a few dozen collections. The agent's own re-apply after a core restart touches it call
// by call too (agent.ts): without that, a re-apply of 100,000 users grew the agent by 150 MB.
import { getHeapStatistics } from "node:v8";

export const GROWTH_BYTES = 8 * 2 ** 20;
/**
 * With a large state the allowance is this share of what the last collection left (about what is
 * live): a full collection's cost grows with what is live, so a fixed 8 MiB made a grant's collections
 * grow with the square of the users (100,000 relayed grants: 40 of the agent's 114 CPU seconds in its
 * helper threads, V8's collector's among them, bench:node 2026-12-03). Up to 16 MiB live the floor rules.
 */
export const GROWTH_SHARE = 0.5;
export const QUIET_MS = 1000;
/** Less than this allocated or committed since the last collection is not worth one at a pause. */
const QUIET_GARBAGE_BYTES = 2 ** 20;

export type HeapSize = { used: number; committed: number };

function v8HeapSize(): HeapSize {
  const stats = getHeapStatistics();
  return { used: stats.used_heap_size, committed: stats.total_heap_size };
}

export class HeapSettler {
  private floor: HeapSize;
  private timer: NodeJS.Timeout | null = null;
  collections = 0;

  constructor(
    private readonly gc: (() => void) | undefined = (globalThis as { gc?: () => void }).gc,
    private readonly heapSize: () => HeapSize = v8HeapSize,
    private readonly quietMs = QUIET_MS,
  ) {
    this.floor = heapSize();
  }

  /** Some work was done (a relayed call, a re-apply's call, a traffic read). */
  touch(): void {
    if (this.gc === undefined) return;
    if (this.heapSize().used - this.floor.used >= Math.max(GROWTH_BYTES, this.floor.used * GROWTH_SHARE))
      this.collect();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.grownBy() >= QUIET_GARBAGE_BYTES) this.collect();
    }, this.quietMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private grownBy(): number {
    const now = this.heapSize();
    return Math.max(now.used - this.floor.used, now.committed - this.floor.committed);
  }

  private collect(): void {
    this.gc?.();
    this.collections += 1;
    this.floor = this.heapSize();
  }
}
