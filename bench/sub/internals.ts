// `npm run bench:sub-internals [-- --users N --seconds S --window-ms W]`: what each Node.js internal
// the /sub fast path relies on saves, on the Node.js that runs this (issue 46: keep one only if it
// saves more than 5 % of /sub's CPU a request on Node 20 and on Node 24). Each internal is probed
// and has a fallback that can be switched at run time (head-text.ts `headSplicing`, fast-path.ts
// `marksRead`), so one service process answers the load in short windows
// that take turns: all internals used, then each one alone switched to its fallback, over and over.
// Each switched window's CPU per request (the process's own utime + stime over the window, over the
// requests answered in it) is divided by the windows with all used on either side of it: a ratio
// of two states measured moments apart under the same load, which holds on a busy machine where
// rounds seconds apart do not (`bench:sub-ab` needs its CPU saturated). Run it pinned like the
// others: the service on CPU 0 (the npm script runs it under `taskset -c 0`), wrk on CPU 1.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pino from "pino";
import { buildApp } from "../../src/app.ts";
import { loadConfig } from "../../src/config/config.ts";
import { createDeps } from "../../src/deps.ts";
import { marksRead } from "../../src/features/subscriptions/fast-path.ts";
import { headSplicing } from "../../src/features/subscriptions/head-text.ts";
import { describeCode, describeMachine } from "../lib/machine.ts";
import { median } from "../lib/stats.ts";
import { runWrk } from "../lib/wrk.ts";
import { SECRET_KEY, seedDatabase } from "./service.ts";

const { values } = parseArgs({
  options: {
    users: { type: "string", default: "20000" },
    seconds: { type: "string", default: "60" },
    "window-ms": { type: "string", default: "500" },
  },
});
const USERS = Number(values.users);
const SECONDS = Number(values.seconds);
const WINDOW_MS = Number(values["window-ms"]);

const STATES = ["all used", "head text: writeHead + end(body)", "marks read: Node dumps"] as const;
type State = (typeof STATES)[number];
/** What the probes found on this Node.js: an internal they refused is never switched on. */
const PROBED = { head: headSplicing.on, mark: marksRead.on };

function use(state: State): void {
  headSplicing.on = PROBED.head && state !== "head text: writeHead + end(body)";
  marksRead.on = PROBED.mark && state !== "marks read: Node dumps";
}

const MACHINE = describeMachine([describeCode(join(import.meta.dirname, "..", ".."))]);
const dataDir = mkdtempSync(join(tmpdir(), "portcullis-internals-"));
try {
  const { seeded } = await seedDatabase("sqlite", dataDir, undefined, USERS, () => false);
  const config = loadConfig({
    DATA_DIR: dataDir,
    PORTCULLIS_SECRET_KEY: SECRET_KEY,
    PORTCULLIS_CORE_TIMEOUT_MS: "1000",
  });
  const deps = await createDeps(config, { logger: pino({ level: "silent" }) });
  const app = await buildApp(deps);
  try {
    await deps.services.subscriptions.warm(new AbortController().signal);
    await app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = app.server.address() as { port: number };
    let requests = 0;
    app.server.on("request", () => {
      requests++;
    });
    const paths = join(dataDir, "paths.txt");
    writeFileSync(paths, `${seeded.userIds.map((id) => `/sub/${id}`).join("\n")}\n`);
    const url = `http://127.0.0.1:${port}`;
    const lua = join(import.meta.dirname, "rotate.lua");
    const wrk = { threads: 1, connections: 64, timeoutSeconds: 10, cpu: 1 };
    await runWrk({ ...wrk, durationSeconds: 4 }, url, lua, [paths, "1"]); // warm-up, all used

    // Windows in turn: all used, one switched, all used, the next switched, …
    const order: State[] = STATES.slice(1).flatMap((state) => ["all used" as State, state]);
    const windows: { state: State; usPerRequest: number; cpuUse: number }[] = [];
    const load = runWrk({ ...wrk, durationSeconds: SECONDS }, url, lua, [paths, "1"]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const end = Date.now() + (SECONDS - 1.5) * 1000;
    for (let i = 0; Date.now() < end; i++) {
      const state = order[i % order.length] as State;
      use(state);
      const cpu = process.cpuUsage();
      const count = requests;
      const started = performance.now();
      await new Promise((resolve) => setTimeout(resolve, WINDOW_MS));
      const used = process.cpuUsage(cpu);
      const answered = requests - count;
      const us = used.user + used.system;
      if (answered > 0) {
        windows.push({
          state,
          usPerRequest: us / answered,
          cpuUse: us / 1000 / (performance.now() - started),
        });
      }
    }
    use("all used");
    const result = await load;

    console.log(
      `npm run bench:sub-internals -- --users ${USERS} --seconds ${SECONDS} --window-ms ${WINDOW_MS}`,
    );
    for (const line of MACHINE) console.log(line);
    console.log(`probes: ${JSON.stringify(PROBED)}`);
    console.log(
      `Node ${process.version}; ${USERS} users; ${windows.length} windows of ${WINDOW_MS} ms; wrk ${result.requests} requests, ${result.errors.status} error answers`,
    );
    console.log(
      `process CPU use over the windows (of one core): median ${median(windows.map((w) => w.cpuUse)).toFixed(2)}`,
    );
    console.log("");
    console.log(
      "| fallback in use | windows | CPU µs/request (median) | over the all-used windows beside it (median; quartiles) |",
    );
    console.log("|---|---|---|---|");
    for (const state of STATES) {
      const own = windows.filter((w) => w.state === state);
      const ratios: number[] = [];
      if (state !== "all used") {
        windows.forEach((w, i) => {
          if (w.state !== state) return;
          const beside = [windows[i - 1], windows[i + 1]].filter((x) => x?.state === "all used");
          if (beside.length > 0)
            ratios.push(w.usPerRequest / median(beside.map((x) => x?.usPerRequest ?? 0)));
        });
      }
      ratios.sort((a, b) => a - b);
      const q = (f: number) => ratios[Math.floor(f * (ratios.length - 1))] ?? Number.NaN;
      const ratio =
        state === "all used"
          ? "1 (the reference)"
          : `**${median(ratios).toFixed(3)}** (${q(0.25).toFixed(3)}–${q(0.75).toFixed(3)})`;
      console.log(
        `| ${state} | ${own.length} | ${median(own.map((w) => w.usPerRequest)).toFixed(1)} | ${ratio} |`,
      );
    }
  } finally {
    await app.close();
    await deps.close();
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
