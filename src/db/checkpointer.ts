// SQLite WAL checkpoints off the event loop. better-sqlite3 runs every statement on the main thread,
// and SQLite's automatic checkpoint runs inside whichever commit pushes the WAL past 1,000 pages: it
// copies those pages into the database file and fsyncs it, 10–40 ms on the benchmark machine, during
// which no request is answered. /sub's batched fetch writes touch a page per user, so under a poll
// load that happened every few seconds and made the 99th percentile of /sub (docs/benchmarks/HISTORY.md).
// Instead the serving connection never checkpoints (wal_autocheckpoint = 0) and a worker thread with
// a connection of its own runs PASSIVE checkpoints every interval: they take no lock a reader or
// writer waits for, so the main thread only ever appends to the WAL. Should the worker fail, the
// serving connection checkpoints automatically again, as SQLite does by default.
import { Worker } from "node:worker_threads";
import type BetterSqlite3 from "better-sqlite3";

/** SQLite's own default for wal_autocheckpoint (pages), restored when the worker is gone. */
const AUTOCHECKPOINT_PAGES = 1000;

export type Checkpointer = {
  /** Stops the worker (its connection closed first); the serving connection checkpoints again. */
  stop(): Promise<void>;
};

export type CheckpointerOptions = {
  /** The database file the serving connection has open. */
  file: string;
  /** The SQLite driver module the serving connection was opened with (resolved path or name). */
  driver: string;
  intervalMs: number;
  /** Told when the worker could not start or failed (the serving connection checkpoints again). */
  onFailure: (error: Error) => void;
};

/** CommonJS for an eval worker: the driver is loaded by the path the main thread resolved. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file, { fileMustExist: true });
db.pragma("busy_timeout = 0");
db.pragma("cache_size = -64");
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
const timer = setInterval(() => checkpoint.all(), workerData.intervalMs);
parentPort.on("message", () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export function startCheckpointer(
  serving: BetterSqlite3.Database,
  options: CheckpointerOptions,
): Checkpointer {
  serving.pragma("wal_autocheckpoint = 0");
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file: options.file, driver: options.driver, intervalMs: options.intervalMs },
    // A checkpoint needs next to no memory: small heaps and page cache keep the worker's RSS low.
    resourceLimits: {
      maxOldGenerationSizeMb: 8,
      maxYoungGenerationSizeMb: 1,
      codeRangeSizeMb: 2,
      stackSizeMb: 1,
    },
  });
  worker.unref();
  let stopping = false;
  const fail = (error: Error) => {
    if (stopping) return;
    stopping = true;
    if (serving.open) serving.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    options.onFailure(error);
  };
  worker.on("error", fail);
  worker.on("exit", (code) => fail(new Error(`the checkpoint worker exited (code ${code})`)));
  return {
    async stop() {
      if (stopping) return;
      stopping = true;
      // Waited for (ref'd), a bounded time: its connection closes before the serving one does.
      worker.ref();
      const exited = new Promise((done) => worker.once("exit", done));
      worker.postMessage("stop");
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((done) => (timer = setTimeout(done, 2000)))]);
      clearTimeout(timer);
      await worker.terminate();
    },
  };
}
